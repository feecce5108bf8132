package opspage

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"

	"github.com/sqsworker/sqsworker/outbox"
)

// OutboxListMax is how many failed entries and parked groups the outbox view lists at
// most (oldest first); the summary counts all of them.
const OutboxListMax = 100

// Outbox is what the page needs of a transactional outbox (package outbox): to count its
// backlog, list its failed entries and parked FIFO groups, and retry or skip a failed
// entry. Any store can back it: the CLI binds its DynamoDB and PostgreSQL stores to
// their clients (cmd/sqsworker/internal/outboxstore), and a service binds its own. The
// page calls it only when the outbox view is opened and after an action, never on the
// refresher's interval. Its methods must be safe for concurrent use.
type Outbox interface {
	// Name says which outbox this is, for people ("DynamoDB table T", "PostgreSQL
	// host:port/database"); it must hold no secret (no password of a connection URL).
	Name() string
	// Summary counts the unpublished entries, the age of the oldest, the failed entries
	// and the parked FIFO message groups.
	Summary(ctx context.Context) (outbox.Summary, error)
	// Failed lists up to limit failed entries with their reasons.
	Failed(ctx context.Context, limit int) ([]outbox.Entry, error)
	// Parked lists up to limit parked FIFO message groups with the entry that holds each.
	Parked(ctx context.Context, limit int) ([]outbox.ParkedGroup, error)
	// Retry makes the failed entry id unpublished again, due at once; Skip deletes it.
	// Both return an error wrapping outbox.ErrNotFailed when no failed entry has that id.
	Retry(ctx context.Context, id string) error
	Skip(ctx context.Context, id string) error
}

// outboxView is the data of outbox.html.
type outboxView struct {
	Summary    *outbox.Summary
	Failed     []outbox.Entry
	Parked     []outbox.ParkedGroup
	MoreFailed bool // the listing stopped at OutboxListMax
	MoreParked bool
	Max        int
	Done       string // what the last action did, "" after a plain look
	Problems   []string
}

// skipView is the data of outbox-skip.html: the confirmation of a skip.
type skipView struct {
	ID    string
	Entry *outbox.Entry // nil when it is not among the entries listed
}

// outboxPage shows the outbox: its summary, failed entries and parked groups.
func (s *Page) outboxPage(w http.ResponseWriter, r *http.Request) {
	if !s.hasOutbox(w) {
		return
	}
	s.renderOutbox(w, r, http.StatusOK, "", "")
}

// renderOutbox reads the outbox and renders its view with status, done (what the
// action did) and problem (why it did nothing). Each read that fails is reported on the
// page, the others still shown.
func (s *Page) renderOutbox(w http.ResponseWriter, r *http.Request, status int, done, problem string) {
	box := s.config.Outbox
	view := &outboxView{Max: OutboxListMax, Done: done}
	ctx := r.Context()
	if summary, err := box.Summary(ctx); err != nil {
		view.Problems = append(view.Problems, "summary: "+err.Error())
	} else {
		view.Summary = &summary
	}
	failed, err := box.Failed(ctx, OutboxListMax)
	if err != nil {
		view.Problems = append(view.Problems, "failed entries: "+err.Error())
	}
	parked, err := box.Parked(ctx, OutboxListMax)
	if err != nil {
		view.Problems = append(view.Problems, "parked groups: "+err.Error())
	}
	view.Failed, view.MoreFailed = failed, len(failed) >= OutboxListMax
	view.Parked, view.MoreParked = parked, len(parked) >= OutboxListMax
	s.renderError(w, status, "outbox.html", "Outbox", view, problem)
}

// outboxRetry makes a failed entry unpublished again, as `sqsworker outbox retry` does:
// the relay sends it on its next cycle, and a group it parked goes on from it.
func (s *Page) outboxRetry(w http.ResponseWriter, r *http.Request) {
	id, ok := s.entryID(w, r)
	if !ok {
		return
	}
	if err := s.config.Outbox.Retry(r.Context(), id); err != nil {
		s.renderOutbox(w, r, outboxStatus(err), "", "nothing retried: "+err.Error())
		return
	}
	s.logger.Info("opspage: retried outbox entry", "outbox", s.config.Outbox.Name(), "id", id)
	s.renderOutbox(w, r, http.StatusOK, "Retried entry "+id+": the relay sends it on its next cycle (a parked group goes on from it, in order).", "")
}

// outboxSkip deletes a failed entry, as `sqsworker outbox skip` does, once confirmed:
// without confirm=yes it only shows what would be lost.
func (s *Page) outboxSkip(w http.ResponseWriter, r *http.Request) {
	id, ok := s.entryID(w, r)
	if !ok {
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		view := &skipView{ID: id}
		failed, err := s.config.Outbox.Failed(r.Context(), OutboxListMax)
		if err != nil {
			s.fail(w, http.StatusBadGateway, err)
			return
		}
		for i := range failed {
			if failed[i].ID == id {
				view.Entry = &failed[i]
			}
		}
		s.render(w, http.StatusOK, "outbox-skip.html", "Skip outbox entry?", view)
		return
	}
	if err := s.config.Outbox.Skip(r.Context(), id); err != nil {
		s.renderOutbox(w, r, outboxStatus(err), "", "nothing skipped: "+err.Error())
		return
	}
	s.logger.Info("opspage: skipped outbox entry", "outbox", s.config.Outbox.Name(), "id", id)
	s.renderOutbox(w, r, http.StatusOK, "Skipped entry "+id+": it is deleted and never sent (a parked group goes on with its next entry).", "")
}

// hasOutbox answers 404 when the page has no outbox.
func (s *Page) hasOutbox(w http.ResponseWriter) bool {
	if s.config.Outbox == nil {
		s.fail(w, http.StatusNotFound, errors.New("no outbox is configured on this page (Config.Outbox; the CLI: --outbox-table TABLE or --outbox-postgres URL)"))
		return false
	}
	return true
}

// entryID returns the "id" parameter of an action, which must have the form of an
// outbox entry id (32 lowercase hex digits); it answers the request otherwise.
func (s *Page) entryID(w http.ResponseWriter, r *http.Request) (string, bool) {
	if !s.hasOutbox(w) {
		return "", false
	}
	id := r.PostFormValue("id")
	if _, err := hex.DecodeString(id); err != nil || len(id) != 32 {
		s.fail(w, http.StatusBadRequest, fmt.Errorf("%q is not an outbox entry id (32 hex digits)", id))
		return "", false
	}
	return id, true
}

// outboxStatus is the status of a failed Retry or Skip: 409 when the entry is not (or
// no longer) failed, 502 when the store failed.
func outboxStatus(err error) int {
	if errors.Is(err, outbox.ErrNotFailed) {
		return http.StatusConflict
	}
	return http.StatusBadGateway
}
