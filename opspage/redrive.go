package opspage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/redrive"
)

// plan is a dry run waiting for its confirmation: the real move runs the same
// parameters, once.
type plan struct {
	ID          string
	Queue       string // the source queue's name (the page's key)
	Source      string // the dead-letter queue's URL
	Destination string // URL
	Reason      string // a failure reason, NoReason, or "" for any
	Expression  string // a redrive.ParseFilter expression, or ""
	Limit       int
	DryRun      *redrive.Result
	Created     time.Time
	Used        bool
}

// Filter is the plan's filter: reason and expression both must match.
func (p *plan) Filter() (redrive.Filter, error) {
	var filters []redrive.Filter
	switch p.Reason {
	case "":
	case NoReason:
		filters = append(filters, func(message *sqsworker.Message) bool {
			_, ok := message.MessageAttributes[sqsworker.AttributeFailureReason]
			return !ok
		})
	default:
		filters = append(filters, redrive.FailureReason(p.Reason))
	}
	if p.Expression != "" {
		filter, err := redrive.ParseFilter(p.Expression)
		if err != nil {
			return nil, err
		}
		filters = append(filters, filter)
	}
	if len(filters) == 0 {
		return nil, nil
	}
	return redrive.All(filters...), nil
}

// Describe says which messages the plan selects.
func (p *plan) Describe() string {
	var parts []string
	switch p.Reason {
	case "":
	case NoReason:
		parts = append(parts, "without a failure reason (moved by the redrive policy)")
	default:
		parts = append(parts, "with failure reason "+strconv.Quote(p.Reason))
	}
	if p.Expression != "" {
		parts = append(parts, "matching "+strconv.Quote(p.Expression))
	}
	if len(parts) == 0 {
		parts = append(parts, "every message")
	}
	if p.Limit > 0 {
		parts = append(parts, fmt.Sprintf("at most %d", p.Limit))
	}
	return strings.Join(parts, ", ")
}

func (p *plan) config(dryRun bool) (redrive.Config, error) {
	filter, err := p.Filter()
	if err != nil {
		return redrive.Config{}, err
	}
	return redrive.Config{Source: p.Source, Destination: p.Destination, Filter: filter, MaxMessages: p.Limit, DryRun: dryRun}, nil
}

// redriveView is the data of redrive.html.
type redriveView struct {
	Plan   *plan
	Result *redrive.Result
	Done   bool // the real move ran
}

// redriveDryRun runs the mover as a dry run (nothing sent or deleted) and keeps the
// plan so that the page can confirm it.
func (s *Page) redriveDryRun(w http.ResponseWriter, r *http.Request) {
	queue, dlq, err := s.dlqOf(r)
	if err != nil {
		s.fail(w, http.StatusNotFound, err)
		return
	}
	p := &plan{ID: newToken()[:24], Queue: queue.Name, Source: dlq.URL, Destination: queue.URL,
		Reason: strings.TrimSpace(r.FormValue("reason")), Expression: strings.TrimSpace(r.FormValue("filter")), Created: time.Now()}
	if text := strings.TrimSpace(r.FormValue("limit")); text != "" {
		if p.Limit, err = strconv.Atoi(text); err != nil || p.Limit < 0 {
			s.fail(w, http.StatusBadRequest, fmt.Errorf("limit %q: want a whole number, 0 for all", text))
			return
		}
	}
	result, err := s.runPlan(r.Context(), p, true)
	if err != nil {
		s.fail(w, statusOf(err), err)
		return
	}
	p.DryRun = result
	s.keep(p)
	s.logger.Info("opspage: redrive dry run", "from", dlq.Name, "to", queue.Name, "filter", p.Describe(), "would_move", result.WouldMove)
	s.render(w, http.StatusOK, "redrive.html", "Redrive dry run", redriveView{Plan: p, Result: result})
}

// badPlanError is a plan the mover refuses before any SQS call (a bad filter or limit).
type badPlanError struct{ error }

func (e badPlanError) Unwrap() error { return e.error }

// statusOf is the HTTP status of an error of runPlan: 400 for a refused plan, 502 for
// a failed SQS call.
func statusOf(err error) int {
	if _, bad := errors.AsType[badPlanError](err); bad {
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

// runPlan runs p's mover, as a dry run or for real. A real run can return a partial
// result together with its error.
func (s *Page) runPlan(ctx context.Context, p *plan, dryRun bool) (*redrive.Result, error) {
	config, err := p.config(dryRun)
	if err != nil {
		return nil, badPlanError{err}
	}
	mover, err := redrive.NewMover(s.api, config)
	if err != nil {
		return nil, badPlanError{err}
	}
	return mover.Run(ctx)
}

// keep stores a dry run for confirmation, dropping expired and, past maxKept, the oldest.
func (s *Page) keep(p *plan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest *plan
	for id, other := range s.plans {
		if time.Since(other.Created) > planLifetime {
			delete(s.plans, id)
		} else if oldest == nil || other.Created.Before(oldest.Created) {
			oldest = other
		}
	}
	if len(s.plans) >= maxKept && oldest != nil {
		delete(s.plans, oldest.ID)
	}
	s.plans[p.ID] = p
}

// redriveMove runs a confirmed dry run for real: the same source, destination, filter
// and limit, once.
func (s *Page) redriveMove(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	p := s.plans[r.FormValue("plan")]
	if p != nil && (p.Used || time.Since(p.Created) > planLifetime) {
		p = nil
	}
	if p != nil {
		p.Used = true
	}
	s.mu.Unlock()
	if p == nil {
		s.fail(w, http.StatusConflict, errors.New("no such dry run waiting for confirmation (it ran already, expired, or the page restarted): run the dry run again"))
		return
	}
	result, err := s.runPlan(r.Context(), p, false)
	if result == nil {
		s.fail(w, statusOf(err), err)
		return
	}
	s.logger.Info("opspage: redrive", "from", queueName(p.Source), "to", p.Queue, "filter", p.Describe(), "moved", result.Moved)
	problem := ""
	if err != nil {
		problem = err.Error()
	}
	s.renderError(w, http.StatusOK, "redrive.html", "Redrive", redriveView{Plan: p, Result: result, Done: true}, problem)
}

// moveTaskStart starts SQS's native message move task on the dead-letter queue: to
// each message's original source queue, or (destination=queue) to the page's queue.
func (s *Page) moveTaskStart(w http.ResponseWriter, r *http.Request) {
	queue, dlq, err := s.dlqOf(r)
	if err != nil {
		s.fail(w, http.StatusNotFound, err)
		return
	}
	options := redrive.MoveTaskOptions{}
	if r.FormValue("destination") == "queue" {
		options.Destination = queue.URL
	}
	if text := strings.TrimSpace(r.FormValue("rate")); text != "" && text != "0" {
		if options.RatePerSecond, err = strconv.Atoi(text); err != nil {
			s.fail(w, http.StatusBadRequest, fmt.Errorf("rate %q: want 1 to %d messages per second", text, redrive.MaxMoveRate))
			return
		}
	}
	task, err := redrive.StartMoveTask(r.Context(), s.api, dlq.URL, options)
	if err != nil {
		s.fail(w, http.StatusConflict, err)
		return
	}
	s.logger.Info("opspage: started message move task", "from", dlq.Name, "destination", task.DestinationARN, "handle", task.Handle)
	http.Redirect(w, r, s.config.Prefix+"/dlq?queue="+url.QueryEscape(queue.Name)+"#tasks", http.StatusSeeOther)
}

// moveTaskCancel cancels the running move task of the dead-letter queue.
func (s *Page) moveTaskCancel(w http.ResponseWriter, r *http.Request) {
	queue, dlq, err := s.dlqOf(r)
	if err != nil {
		s.fail(w, http.StatusNotFound, err)
		return
	}
	if _, err := redrive.CancelActiveMoveTask(r.Context(), s.api, dlq.URL); err != nil {
		s.fail(w, http.StatusConflict, err)
		return
	}
	s.logger.Info("opspage: cancelled message move task", "from", dlq.Name)
	http.Redirect(w, r, s.config.Prefix+"/dlq?queue="+url.QueryEscape(queue.Name)+"#tasks", http.StatusSeeOther)
}
