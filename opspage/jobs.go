package opspage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/redrive"
)

// JobRecords is what the page reads job records from ([Config.Jobs]); *jobs.Store
// implements it. Get returns the record of the job id (a consistent read), or an
// error matching jobs.ErrNotFound when there is none.
type JobRecords interface {
	Get(ctx context.Context, id string) (jobs.Record, error)
}

// jobView is the data of jobs.html.
type jobView struct {
	ID     string // as typed
	Record *jobs.Record
}

// jobsPage shows the record of the job whose id the form names, as `sqsworker jobs
// get` does.
func (s *Page) jobsPage(w http.ResponseWriter, r *http.Request) {
	if s.config.Jobs == nil {
		s.fail(w, http.StatusNotFound, errors.New("no job records are configured on this page (Config.Jobs; the CLI: --table TABLE)"))
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

// recordLink is the default Config.JobLink when the page shows job records: a dead
// letter with a job-id attribute links to its record on this page.
func recordLink(prefix string) func(string, redrive.DeadLetter) string {
	return func(_ string, letter redrive.DeadLetter) string {
		id, ok := letter.MessageAttributes[sqsworker.AttributeJobID]
		if !ok || id.StringValue == "" {
			return ""
		}
		return prefix + "/jobs?id=" + url.QueryEscape(id.StringValue)
	}
}
