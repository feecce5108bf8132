package opspage

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/sqsworker/sqsworker/batches"
)

// BatchStatuses is what the page reads batches from ([Config.Batches]); *batches.Batches
// implements it. Get returns the batch (consistent reads), an error matching
// batches.ErrNotFound when there is none and batches.ErrInvalidAttribute for an id that
// is not a batch id.
type BatchStatuses interface {
	Get(ctx context.Context, id string) (batches.Status, error)
}

// batchView is the data of batches.html.
type batchView struct {
	ID     string // as typed
	Status *batches.Status
	State  string
}

// batchesPage shows the batch whose id the form names, as `sqsworker batches show` does.
func (s *Page) batchesPage(w http.ResponseWriter, r *http.Request) {
	if s.config.Batches == nil {
		s.fail(w, http.StatusNotFound, errors.New("no batches are configured on this page (Config.Batches; the CLI: --table TABLE)"))
		return
	}
	view := &batchView{ID: r.FormValue("id")}
	if view.ID == "" {
		s.render(w, http.StatusOK, "batches.html", "Batches", view)
		return
	}
	status, err := s.config.Batches.Get(r.Context(), view.ID)
	switch {
	case errors.Is(err, batches.ErrInvalidAttribute):
		err = fmt.Errorf("%q is not a batch id (a ULID)", view.ID)
	case errors.Is(err, batches.ErrNotFound):
		err = fmt.Errorf("no batch %s in table %s (never opened, or past its retention)", view.ID, s.config.Table)
	}
	if err != nil {
		s.renderError(w, http.StatusOK, "batches.html", "Batches", view, err.Error())
		return
	}
	view.Status, view.State = &status, status.State()
	s.render(w, http.StatusOK, "batches.html", "Batch "+view.ID, view)
}
