package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/scheduler"
)

// `schedules` lists the file's schedules with next runs, the last tick a running
// scheduler enqueued, and the leader (text and JSON); before any replica ran it says
// there is no leader.
func TestCLISchedules(t *testing.T) {
	t.Parallel()
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	file := filepath.Join(t.TempDir(), "schedules.json")
	definitions := fmt.Sprintf(`{"schedules": [
		{"name": "every-second", "cron": "@every 1s", "job_type": "ping", "queue": %q},
		{"name": "nightly", "cron": "0 2 * * *", "time_zone": "Europe/Berlin", "job_type": "report", "queue": %q, "jitter": "5m"}]}`, queue.URL, queue.URL)
	if err := os.WriteFile(file, []byte(definitions), 0o600); err != nil {
		t.Fatal(err)
	}

	r := want(t, exitOK, "schedules", "--file", file, "--table", table)
	if !strings.Contains(r.stdout, "Leader: none (no replica has taken lease") {
		t.Fatalf("before any replica:\n%s", r.stdout)
	}
	want(t, exitUsage, "schedules", "--file", file)

	schedules, err := scheduler.ReadSchedules(file)
	if err != nil {
		t.Fatal(err)
	}
	var enqueued atomic.Value
	s, err := scheduler.New(sqsClient, dynamo, scheduler.Config{
		Table: table, Owner: "replica-1", LeaseDuration: 30 * time.Second, Logger: slog.New(slog.DiscardHandler),
		Observer: scheduler.ObserverFunc(func(_ context.Context, ev scheduler.Event) {
			if ev.Kind == scheduler.EventTickEnqueued {
				enqueued.Store(ev.TickID)
			}
		}),
	}, schedules)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	testenv.Eventually(t, time.Minute, "a tick enqueued", func() bool { return enqueued.Load() != nil })
	if err := s.Shutdown(context.Background()); err != nil { // the state stays as recorded
		t.Fatal(err)
	}
	last := enqueued.Load().(string)

	view := decode[schedulesView](t, want(t, exitOK, "schedules", "--file", file, "--table", table, "--next", "2", "-o", "json"))
	if view.Leader == nil || view.Leader.Owner != "replica-1" || view.Leader.Token != 1 || view.LeaderAlive {
		t.Fatalf("leader after a shutdown (released lease) = %+v alive=%v", view.Leader, view.LeaderAlive)
	}
	if len(view.Schedules) != 2 || view.Schedules[0].LastEnqueuedTick != last || view.Schedules[0].MessageID == "" ||
		len(view.Schedules[0].NextRuns) != 2 || view.Schedules[1].LastEnqueuedTick != "" || view.Schedules[1].Jitter != "5m0s" {
		t.Fatalf("schedules = %+v", view.Schedules)
	}
	nightly := view.Schedules[1].NextRuns[0].In(must(time.LoadLocation("Europe/Berlin")))
	if nightly.Hour() != 2 || nightly.Minute() != 0 {
		t.Fatalf("nightly next run %s is not 02:00 in Berlin", nightly)
	}
	r = want(t, exitOK, "schedules", "--file", file, "--table", table)
	if !strings.Contains(r.stdout, "Leader: none (lease of replica-1, token 1, lapsed") || !strings.Contains(r.stdout, last) {
		t.Fatalf("text output:\n%s", r.stdout)
	}
}

func must[T any](value T, err error) T {
	if err != nil {
		panic(err)
	}
	return value
}

// Items under the scheduler's ids that it did not write (an idempotency record where the
// lease belongs, a state item whose tick time is a string) are shown as such, with what
// is wrong, in text and JSON, instead of as a leader with no name and token 0 and a last
// tick in the year 1.
func TestCLISchedulesShowsMalformedItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	file := filepath.Join(t.TempDir(), "schedules.json")
	definitions := fmt.Sprintf(`{"schedules": [{"name": "nightly", "cron": "0 2 * * *", "job_type": "report", "queue": %q}]}`, queue.URL)
	if err := os.WriteFile(file, []byte(definitions), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, item := range []map[string]dynamodbtypes.AttributeValue{
		{"id": &dynamodbtypes.AttributeValueMemberS{Value: "scheduler#lease#scheduler"}, "status": &dynamodbtypes.AttributeValueMemberS{Value: "COMPLETED"}},
		{"id": &dynamodbtypes.AttributeValueMemberS{Value: "scheduler#schedule#nightly"}, "tick_ms": &dynamodbtypes.AttributeValueMemberS{Value: "yesterday"},
			"sent": &dynamodbtypes.AttributeValueMemberBOOL{Value: true}, "token": &dynamodbtypes.AttributeValueMemberN{Value: "1"}},
	} {
		if _, err := dynamo.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	r := want(t, exitOK, "schedules", "--file", file, "--table", table)
	for _, text := range []string{
		`Leader: none (the lease item is not a lease, so no replica takes it: scheduler: malformed item "scheduler#lease#scheduler"`,
		"attribute owner is missing",
		`the state item is not the scheduler's, the schedule does not tick: scheduler: malformed item "scheduler#schedule#nightly"`,
		"attribute tick_ms is not a number",
	} {
		if !strings.Contains(r.stdout, text) {
			t.Errorf("text output lacks %q:\n%s", text, r.stdout)
		}
	}
	view := decode[schedulesView](t, want(t, exitOK, "schedules", "--file", file, "--table", table, "-o", "json"))
	if view.Leader != nil || !strings.Contains(view.LeaseProblem, "attribute owner is missing") ||
		len(view.Schedules) != 1 || !strings.Contains(view.Schedules[0].Problem, "attribute tick_ms is not a number") || !view.Schedules[0].Through.IsZero() {
		t.Fatalf("JSON view = %+v", view)
	}
}
