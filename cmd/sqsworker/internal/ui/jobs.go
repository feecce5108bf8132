package ui

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sqsworker/sqsworker/jobs"
)

// jobView is the data of jobs.html.
type jobView struct {
	ID     string // as typed
	Record *jobs.Record
}

// jobsPage shows the record of the job whose id the form names, as `sqsworker jobs
// get` does (a consistent read).
func (s *Server) jobsPage(w http.ResponseWriter, r *http.Request) {
	if s.config.Jobs == nil {
		s.fail(w, http.StatusNotFound, errors.New("no job records: start the page with --table TABLE"))
		return
	}
	view := &jobView{ID: r.FormValue("id")}
	if view.ID == "" {
		s.render(w, http.StatusOK, "jobs.html", "Jobs", view)
		return
	}
	record, err := s.config.Jobs.Get(r.Context(), view.ID)
	if errors.Is(err, jobs.ErrNotFound) {
		err = fmt.Errorf("no record of job %s in table %s (not recorded, or expired)", view.ID, s.config.Table)
	}
	if err != nil {
		s.renderError(w, http.StatusOK, "jobs.html", "Jobs", view, err.Error())
		return
	}
	view.Record = &record
	s.render(w, http.StatusOK, "jobs.html", "Job "+view.ID, view)
}
