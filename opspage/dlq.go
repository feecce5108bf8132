package opspage

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/redrive"
)

// peekPatience is how long a look goes on receiving while SQS counts visible dead
// letters that no receive returns (an emulator under load, a short poll on AWS), so that
// the groups count every message (redrive.PeekOptions.Patience).
const peekPatience = 5 * time.Second

// NoReason is the group of dead letters without a failure-reason attribute: the redrive
// policy moved them after maxReceiveCount receives (a host's own dead-letter send
// always records a reason). As a redrive filter it selects those messages.
const NoReason = "-"

// peek is the last look at a dead-letter queue.
type peek struct {
	At     time.Time
	Result *redrive.PeekResult
	Groups []group
}

// group is the dead letters of one failure reason.
type group struct {
	// Reason is the failure-reason attribute, or NoReason.
	Reason string
	// Label describes the reason for the page.
	Label string
	Count int
}

// groupByReason counts dead letters by failure reason, the largest group first.
func groupByReason(letters []redrive.DeadLetter) []group {
	counts := map[string]int{}
	for _, letter := range letters {
		counts[reasonOf(letter)]++
	}
	groups := make([]group, 0, len(counts))
	for reason, count := range counts {
		label := reason
		if reason == NoReason {
			label = "(none: moved by the redrive policy after maxReceiveCount receives)"
		}
		groups = append(groups, group{Reason: reason, Label: label, Count: count})
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].Count != groups[j].Count {
			return groups[i].Count > groups[j].Count
		}
		return groups[i].Reason < groups[j].Reason
	})
	return groups
}

func reasonOf(letter redrive.DeadLetter) string {
	if letter.FailureReason == "" {
		return NoReason
	}
	return letter.FailureReason
}

// dlqView is the data of dlq.html.
type dlqView struct {
	Queue QueueSnapshot
	DLQ   *DLQSnapshot
	Peek  *peek
	Max   int
}

func (s *Page) dlqView(r *http.Request) (*dlqView, error) {
	queue, dlq, err := s.dlqOf(r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	last := s.peeks[queue.Name]
	s.mu.Unlock()
	return &dlqView{Queue: queue, DLQ: dlq, Peek: last, Max: s.config.PeekMax}, nil
}

func (s *Page) dlqPage(w http.ResponseWriter, r *http.Request) {
	view, err := s.dlqView(r)
	if err != nil {
		s.fail(w, http.StatusNotFound, err)
		return
	}
	s.render(w, http.StatusOK, "dlq.html", "Dead letters of "+view.Queue.Name, view)
}

// dlqPeek looks at up to PeekMax dead letters with redrive.Peek (receive, then release
// them all) and keeps the result for the message pages. It is a POST: each look adds one
// to every message's ApproximateReceiveCount.
func (s *Page) dlqPeek(w http.ResponseWriter, r *http.Request) {
	queue, dlq, err := s.dlqOf(r)
	if err != nil {
		s.fail(w, http.StatusNotFound, err)
		return
	}
	result, err := redrive.Peek(r.Context(), s.api, dlq.URL, redrive.PeekOptions{MaxMessages: s.config.PeekMax, Patience: peekPatience})
	if result == nil {
		s.fail(w, http.StatusBadGateway, err)
		return
	}
	last := &peek{At: time.Now(), Result: result, Groups: groupByReason(result.Messages)}
	s.mu.Lock()
	s.peeks[queue.Name] = last
	s.mu.Unlock()
	s.logger.Info("opspage: looked at dead letters", "queue", dlq.Name, "seen", len(result.Messages), "receives", result.ReceivesUsed)
	view := &dlqView{Queue: queue, DLQ: dlq, Peek: last, Max: s.config.PeekMax}
	problem := ""
	if err != nil {
		problem = err.Error()
	}
	s.renderError(w, http.StatusOK, "dlq.html", "Dead letters of "+queue.Name, view, problem)
}

// messageView is the data of message.html.
type messageView struct {
	Queue    QueueSnapshot
	Letter   redrive.DeadLetter
	Reason   string
	ShowBody bool
	Seen     time.Time
}

// messagePage shows one message of the last look, from memory (no SQS call); its body
// only at /dlq/body.
func (s *Page) messagePage(w http.ResponseWriter, r *http.Request) {
	queue, _, err := s.dlqOf(r)
	if err != nil {
		s.fail(w, http.StatusNotFound, err)
		return
	}
	id := r.FormValue("id")
	s.mu.Lock()
	last := s.peeks[queue.Name]
	s.mu.Unlock()
	if last == nil {
		s.fail(w, http.StatusNotFound, errors.New("no look at this dead-letter queue yet: press Look at dead letters on its page"))
		return
	}
	for _, letter := range last.Result.Messages {
		if letter.ID == id {
			view := messageView{Queue: queue, Letter: letter, Reason: reasonOf(letter), ShowBody: strings.HasSuffix(r.URL.Path, "/body"), Seen: last.At}
			s.render(w, http.StatusOK, "message.html", "Message "+id, view)
			return
		}
	}
	s.fail(w, http.StatusNotFound, fmt.Errorf("message %q was not seen in the last look at %s", id, queue.DLQ.Name))
}
