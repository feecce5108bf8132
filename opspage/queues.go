package opspage

import (
	"encoding/json"
	"html/template"
	"net/http"
	"time"

	"github.com/sqsworker/sqsworker/opspage/humantime"
)

// liveQueue is one queue of /api/queues: its formatted cells (see cells).
type liveQueue struct {
	Name  string            `json:"name"`
	Cells map[string]string `json:"cells"`
}

// live is the answer of GET /api/queues, read by static/refresh.js.
type live struct {
	At           string      `json:"at"`
	MetricsError string      `json:"metrics_error,omitempty"`
	Queues       []liveQueue `json:"queues"`
}

func (s *Page) queuesPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, http.StatusOK, "queues.html", "Queues", nil)
}

// queuesJSON serves the refresher's last snapshot; it makes no SQS call.
func (s *Page) queuesJSON(w http.ResponseWriter, r *http.Request) {
	snapshot := s.refresher.snapshotNow()
	answer := live{At: humantime.Timestamp(snapshot.At), MetricsError: snapshot.MetricsError, Queues: make([]liveQueue, 0, len(snapshot.Queues))}
	for _, q := range snapshot.Queues {
		answer.Queues = append(answer.Queues, liveQueue{Name: q.Name, Cells: cells(q)})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// queueView is the data of queue.html.
type queueView struct {
	Queue  QueueSnapshot
	Charts []template.HTML
	// Since is when the charts begin; Kept how many polls they draw from.
	Since time.Time
	Kept  int
	// FromAges says the age chart comes from Config.Ages, not from the polls' bound.
	FromAges bool
}

// queueView draws the charts of the configured queue named by the "queue" parameter,
// from the refresher's history (no SQS call).
func (s *Page) queueView(r *http.Request) (*queueView, error) {
	queue, err := s.queueOf(r)
	if err != nil {
		return nil, err
	}
	samples := s.refresher.historyOf(queue.URL)
	to := s.refresher.now()
	if n := len(samples); n > 0 && samples[n-1].at.After(to) {
		to = samples[n-1].at
	}
	from := to.Add(-s.config.History)
	view := &queueView{Queue: queue, Since: from, Kept: len(samples), FromAges: s.config.Ages != nil}
	for _, series := range queueSeries(samples, s.config.Counters != nil, s.config.Ages != nil) {
		view.Charts = append(view.Charts, drawChart(series, from, to))
	}
	return view, nil
}

// queuePage shows one queue: its live counts and its charts.
func (s *Page) queuePage(w http.ResponseWriter, r *http.Request) {
	view, err := s.queueView(r)
	if err != nil {
		s.fail(w, http.StatusNotFound, err)
		return
	}
	s.render(w, http.StatusOK, "queue.html", "Queue "+view.Queue.Name, view)
}

// queueCharts serves the charts alone, an HTML fragment that static/refresh.js puts in
// place of the queue page's every interval.
func (s *Page) queueCharts(w http.ResponseWriter, r *http.Request) {
	view, err := s.queueView(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := s.pages["queue.html"].ExecuteTemplate(w, "charts", view); err != nil {
		s.logger.Error("opspage: rendering", "page", "queue charts", "err", err)
	}
}
