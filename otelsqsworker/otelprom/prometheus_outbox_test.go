package otelprom_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/otelsqsworker/oteloutbox"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelprom"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelscheduler"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/provision"
	"github.com/sqsworker/sqsworker/scheduler"
)

// TestPrometheusScrapesOutboxAndScheduler: a real Prometheus server scrapes the metrics
// of a DynamoDB outbox relay (moto) publishing 3 email jobs and 1 plain job and refusing
// 1 (an attribute SQS rejects), and of a scheduler enqueueing ticks every second until it
// is shut down; PromQL then returns exactly those counts, the relay's last backlog (0)
// and the scheduler's leadership (every term gained and lost, the last at shutdown, not
// leading), all as the relay and the scheduler reported them.
func TestPrometheusScrapesOutboxAndScheduler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	provider, handler, err := otelprom.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	outboxMetrics, err := oteloutbox.NewMetrics(oteloutbox.Config{MeterProvider: provider})
	require.NoError(t, err)
	schedulerMetrics, err := otelscheduler.NewMetrics(otelscheduler.Config{MeterProvider: provider})
	require.NoError(t, err)
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	prometheus := startPrometheus(t, strings.TrimPrefix(server.URL, "http://"))

	// DynamoDB round trips measured now set the waits: the emulator serves one request
	// at a time, and on a busy machine one call can take seconds.
	table := testenv.NewTable(t, dynamo)
	var slowest time.Duration
	for range 3 {
		begin := time.Now()
		_, err := dynamo.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]dynamodbtypes.AttributeValue{"id": &dynamodbtypes.AttributeValueMemberS{Value: "probe"}}})
		require.NoError(t, err)
		slowest = max(slowest, time.Since(begin))
	}
	// The relay needs some 10 calls, the scheduler some 10 per tick; Prometheus scrapes
	// every second.
	wait := 30*time.Second + 100*slowest

	// The outbox.
	jobsQueue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	box, err := outboxdynamo.New(outboxdynamo.Config{Table: testenv.UniqueName(t)})
	require.NoError(t, err)
	require.NoError(t, provision.CreateNewTable(ctx, dynamo, box.CreateTableInput()))
	t.Cleanup(func() {
		_, _ = dynamo.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(box.Table())})
	})
	refused := producer.Job{Type: "email", Body: "x", Attributes: map[string]sqstypes.MessageAttributeValue{
		"note": {DataType: aws.String("String"), StringValue: aws.String("bell \x07 is not a character SQS accepts")},
	}}
	email := producer.Job{Type: "email", Body: `{"to":"a@example.com"}`}
	items, _, err := box.TransactItems(nil, jobsQueue.URL, email, email, refused, email, producer.Job{Body: "plain"})
	require.NoError(t, err)
	_, err = dynamo.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	require.NoError(t, err)
	jobs, err := producer.New(sqsClient, producer.Config{})
	require.NoError(t, err)
	relay, err := outboxdynamo.NewRelay(dynamo, box, jobs, outbox.RelayConfig{PollInterval: 50 * time.Millisecond, ReportInterval: 100 * time.Millisecond, Observer: outboxMetrics})
	require.NoError(t, err)
	require.NoError(t, relay.Start(ctx))
	t.Cleanup(func() { _ = relay.Shutdown(context.Background()) })

	// The scheduler, counting its events beside the metrics.
	ticksQueue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	var mu sync.Mutex
	events := map[scheduler.EventKind]int{}
	lost := map[string]int{} // by reason
	resent := 0
	observer := scheduler.ObserverFunc(func(ctx context.Context, ev scheduler.Event) {
		schedulerMetrics.ObserveScheduler(ctx, ev)
		mu.Lock()
		defer mu.Unlock()
		switch ev.Kind {
		case scheduler.EventTicksSkipped:
			events[ev.Kind] += int(ev.Skipped)
		case scheduler.EventTickEnqueued:
			events[ev.Kind]++
			if ev.Attempt > 1 { // recorded after a resend (a loaded emulator): counted as resent
				resent++
			}
		case scheduler.EventLeadershipLost:
			events[ev.Kind]++
			lost[ev.Reason]++
		default:
			events[ev.Kind]++
		}
	})
	count := func(kind scheduler.EventKind) int {
		mu.Lock()
		defer mu.Unlock()
		return events[kind]
	}
	ticks, err := scheduler.New(sqsClient, dynamo, scheduler.Config{Table: table, LeaseDuration: 5 * time.Second, Observer: observer, Logger: slog.New(slog.DiscardHandler)},
		[]scheduler.Schedule{{Name: "report", Cron: "@every 1s", JobType: "report", Queue: ticksQueue.URL}})
	require.NoError(t, err)
	require.NoError(t, ticks.Start(ctx))
	t.Cleanup(func() { _ = ticks.Shutdown(context.Background()) })

	testenv.Eventually(t, wait, "4 entries published and 1 refused", func() bool {
		s := relay.Stats()
		return s.Published == 4 && s.Failed == 1
	})
	testenv.Eventually(t, wait, "2 ticks enqueued", func() bool { return count(scheduler.EventTickEnqueued) >= 2 })
	require.NoError(t, ticks.Shutdown(ctx))
	// Every term ends in one loss (the last at shutdown), whatever a loaded emulator
	// did to the lease in between.
	require.Equal(t, count(scheduler.EventLeadershipGained), count(scheduler.EventLeadershipLost))
	require.Equal(t, 1, lost["shutdown"])

	outcomes := map[string]int{}
	mu.Lock()
	enqueued := events[scheduler.EventTickEnqueued]
	for outcome, n := range map[string]int{
		"enqueued": enqueued - resent, "resent": resent,
		"skipped": events[scheduler.EventTicksSkipped], "failed": events[scheduler.EventTickFailed],
	} {
		if n > 0 {
			outcomes[outcome] = n
		}
	}
	mu.Unlock()
	store := `sqsworker_outbox_store="dynamodb"`
	checks := []struct {
		promql, label string
		want          map[string]int
	}{
		{`sum by (sqsworker_job_type) (sqsworker_outbox_entries_published_total{` + store + `})`, "sqsworker_job_type", map[string]int{"email": 3, "": 1}},
		{`sum by (sqsworker_outbox_failure) (sqsworker_outbox_entries_failed_total{` + store + `})`, "sqsworker_outbox_failure", map[string]int{"refused": 1}},
		{`sum(sqsworker_outbox_lag_seconds_count{` + store + `})`, "", map[string]int{"": 4}},
		{`sum(sqsworker_outbox_backlog{` + store + `})`, "", map[string]int{"": 0}},
		{`sum(sqsworker_outbox_failed{` + store + `})`, "", map[string]int{"": 1}},
		{`sum(sqsworker_outbox_groups_parked{` + store + `})`, "", map[string]int{"": 0}},
		{`sum(sqsworker_outbox_oldest_unpublished_age_seconds{` + store + `})`, "", map[string]int{"": 0}},
		{`sum by (sqsworker_tick_outcome) (sqsworker_scheduler_ticks_total{sqsworker_schedule="report"})`, "sqsworker_tick_outcome", outcomes},
		{`sum(sqsworker_scheduler_tick_delay_seconds_count{sqsworker_schedule="report"})`, "", map[string]int{"": enqueued}},
		{`sum(sqsworker_scheduler_leader)`, "", map[string]int{"": 0}},
		{`sum(sqsworker_scheduler_leadership_gained_total)`, "", map[string]int{"": count(scheduler.EventLeadershipGained)}},
		{`sum by (sqsworker_reason) (sqsworker_scheduler_leadership_lost_total)`, "sqsworker_reason", lost},
	}
	// Scrapes run every second; wait for one that saw the final state.
	for _, check := range checks {
		var got map[string]int
		testenv.Eventually(t, 30*time.Second, check.promql, func() bool {
			got = query(t, prometheus, check.promql, check.label)
			return fmt.Sprint(got) == fmt.Sprint(check.want)
		})
		require.Equal(t, check.want, got, check.promql)
	}
}
