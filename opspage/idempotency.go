package opspage

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sqsworker/sqsworker/idempotency"
)

// recordView is the data of idempotency.html.
type recordView struct {
	Key       string // as typed
	StoredKey string
	Record    *idempotency.Record
	Expired   bool
	LeaseEnds string // "" when the record has no running lease
	Released  bool
}

func (s *Page) idempotencyPage(w http.ResponseWriter, r *http.Request) {
	view := &recordView{Key: r.FormValue("key")}
	if s.config.Store == nil {
		s.fail(w, http.StatusNotFound, errors.New("no idempotency table is configured on this page (Config.Store; the CLI: --table TABLE)"))
		return
	}
	if view.Key == "" {
		s.render(w, http.StatusOK, "idempotency.html", "Idempotency records", view)
		return
	}
	if err := s.lookup(r, view); err != nil {
		s.renderError(w, http.StatusOK, "idempotency.html", "Idempotency records", view, err.Error())
		return
	}
	s.render(w, http.StatusOK, "idempotency.html", "Idempotency record", view)
}

// lookup reads the record of view.Key (a consistent read), as `sqsworker idempotency
// get` does.
func (s *Page) lookup(r *http.Request, view *recordView) error {
	stored, err := idempotency.StoredKey(s.config.KeyPrefix, view.Key)
	if err != nil {
		return err
	}
	view.StoredKey = stored
	record, err := s.config.Store.Get(r.Context(), stored)
	if errors.Is(err, idempotency.ErrNotFound) {
		return fmt.Errorf("no idempotency record for key %q in table %s", stored, s.config.Table)
	}
	if err != nil {
		return err
	}
	now := time.Now()
	view.Record = &record
	view.Expired = record.Expired(now)
	if remaining := record.LeaseRemaining(now); remaining > 0 {
		view.LeaseEnds = remaining.Round(time.Second).String()
	}
	return nil
}

// idempotencyRelease deletes a record, conditioned on the lease shown on the page, with
// the rules of `sqsworker idempotency delete`: a COMPLETED record needs force (its next
// duplicate runs the handler again), and a record claimed again since it was read is
// never deleted.
func (s *Page) idempotencyRelease(w http.ResponseWriter, r *http.Request) {
	if s.config.Store == nil {
		s.fail(w, http.StatusNotFound, errors.New("no idempotency table is configured on this page (Config.Store; the CLI: --table TABLE)"))
		return
	}
	view := &recordView{Key: r.FormValue("key")}
	if err := s.lookup(r, view); err != nil {
		s.renderError(w, http.StatusOK, "idempotency.html", "Idempotency records", view, err.Error())
		return
	}
	if view.Record.Lease != r.FormValue("lease") {
		s.renderError(w, http.StatusConflict, "idempotency.html", "Idempotency record", view,
			"the record changed since the page showed it (claimed again); nothing deleted: look at it again")
		return
	}
	if view.Record.Status == idempotency.StatusCompleted && r.FormValue("force") != "yes" {
		s.renderError(w, http.StatusConflict, "idempotency.html", "Idempotency record", view,
			"refusing to delete a COMPLETED record without confirmation: the next duplicate of its message would run the handler again")
		return
	}
	if err := s.config.Store.Delete(r.Context(), view.StoredKey, view.Record.Lease); err != nil {
		// A lost lease with the record gone means it was deleted (by someone else, or by
		// this call's SDK retry): the key is released either way.
		if _, getErr := s.config.Store.Get(r.Context(), view.StoredKey); !errors.Is(err, idempotency.ErrLeaseLost) || !errors.Is(getErr, idempotency.ErrNotFound) {
			s.renderError(w, http.StatusConflict, "idempotency.html", "Idempotency record", view, "nothing deleted: "+err.Error())
			return
		}
	}
	s.logger.Info("opspage: released idempotency record", "table", s.config.Table, "key", view.StoredKey, "status", view.Record.Status)
	view.Released = true
	s.render(w, http.StatusOK, "idempotency.html", "Idempotency record released", view)
}
