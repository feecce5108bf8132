package main

import (
	"context"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/producer"
)

// TestCLIJobs: `jobs get` shows a recorded job (text and JSON), `jobs cancel` cancels a
// job not started yet and refuses a finished one, saying so.
func TestCLIJobs(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	table := testenv.NewTable(t, db)
	store, err := jobs.NewStore(db, jobs.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	done := producer.NewJobID()
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		if err := jobs.Progress(ctx, map[string]int{"rows": 10}); err != nil {
			return err
		}
		return jobs.SetResult(ctx, map[string]string{"file": "s3://exports/e-1.csv"})
	}), store.Middleware(jobs.MiddlewareConfig{}))
	message := &sqsworker.Message{ID: "m-1", Body: "{}", ReceiveCount: 1, MessageAttributes: map[string]sqsworker.MessageAttribute{
		sqsworker.AttributeJobID: {DataType: "String", StringValue: done}, sqsworker.AttributeJobType: {DataType: "String", StringValue: "export"},
	}}
	if err := handler.Handle(context.Background(), message); err != nil {
		t.Fatal(err)
	}

	got := decode[jobView](t, want(t, exitOK, "jobs", "get", done, "--table", table, "-o", "json"))
	if got.ID != done || got.State != jobs.StateSucceeded || got.Attempts != 1 || got.Type != "export" ||
		compact(got.Result) != `{"file":"s3://exports/e-1.csv"}` || compact(got.Progress) != `{"rows":10}` {
		t.Fatalf("jobs get -o json = %+v", got)
	}
	r := want(t, exitOK, "jobs", "get", done, "--table", table)
	for _, line := range []string{"State:       succeeded", "Attempts:    1", `Result:      {"file":"s3://exports/e-1.csv"}`} {
		if !strings.Contains(r.stdout, line) {
			t.Fatalf("jobs get: no %q in\n%s", line, r.stdout)
		}
	}
	r = want(t, exitError, "jobs", "cancel", done, "--table", table)
	if !strings.Contains(r.stderr, "has already finished (succeeded); nothing to cancel") {
		t.Fatalf("cancel a finished job: %s", r.stderr)
	}

	queued := producer.NewJobID()
	r = want(t, exitOK, "jobs", "cancel", queued, "--table", table)
	if !strings.Contains(r.stdout, "Job "+queued+" cancelled: it will not run.") {
		t.Fatalf("cancel a queued job: %s", r.stdout)
	}
	if got := decode[jobView](t, want(t, exitOK, "jobs", "get", queued, "--table", table, "-o", "json")); got.State != jobs.StateCancelled || !got.CancelRequested {
		t.Fatalf("after cancel: %+v", got)
	}
	r = want(t, exitError, "jobs", "get", producer.NewJobID(), "--table", table)
	if !strings.Contains(r.stderr, "no record of job") {
		t.Fatalf("get an unknown job: %s", r.stderr)
	}
}

// compact is a JSON document without its whitespace (the CLI indents its JSON output).
func compact(document []byte) string { return strings.Join(strings.Fields(string(document)), "") }
