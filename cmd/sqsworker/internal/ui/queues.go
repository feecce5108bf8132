package ui

import (
	"encoding/json"
	"github.com/sqsworker/sqsworker/cmd/sqsworker/internal/humantime"
	"net/http"
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

func (s *Server) queuesPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, http.StatusOK, "queues.html", "Queues", nil)
}

// queuesJSON serves the refresher's last snapshot; it makes no SQS call.
func (s *Server) queuesJSON(w http.ResponseWriter, r *http.Request) {
	snapshot := s.refresher.Snapshot()
	answer := live{At: humantime.Timestamp(snapshot.At), MetricsError: snapshot.MetricsError, Queues: make([]liveQueue, 0, len(snapshot.Queues))}
	for _, q := range snapshot.Queues {
		answer.Queues = append(answer.Queues, liveQueue{Name: q.Name, Cells: cells(q)})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}
