package otelsqsworker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelprom"
)

// scrape returns the Prometheus exposition the handler serves.
func scrape(t *testing.T, handler http.Handler) string {
	t.Helper()
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, recorder.Code)
	body, err := io.ReadAll(recorder.Body)
	require.NoError(t, err)
	return string(body)
}

// seriesOf returns the series lines of one metric in an exposition, without their value.
func seriesOf(exposition, metric string) []string {
	var series []string
	for line := range strings.SplitSeq(exposition, "\n") {
		if strings.HasPrefix(line, metric+"{") {
			labels, _, _ := strings.Cut(line, "} ")
			series = append(series, labels+"}")
		}
	}
	return series
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	var stats runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&stats)
	return stats.HeapAlloc
}

// TestMetricsBoundSenderChosenJobTypes: whoever may send to the queue chooses the job-type
// attribute. 20,000 messages of distinct types (200 bytes each) routed through a mux that
// registers two keep no memory and add one series: they are all labelled "unregistered",
// while the registered types keep their own. Before the labels were bounded, these 20,000
// types kept one attribute set each (about 40 MiB of live heap here) and one scrape was
// several MiB long.
func TestMetricsBoundSenderChosenJobTypes(t *testing.T) {
	provider, handler, err := otelprom.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("email", func(context.Context, *sqsworker.Message) error { return nil })
	mux.RegisterFunc("invoice", func(context.Context, *sqsworker.Message) error { return nil })
	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider, Registered: mux.Registered})
	require.NoError(t, err)
	ctx := context.Background()
	handle := func(jobType string) {
		m := newMessage(jobType)
		life(ctx, metrics, m, mux.Handle(ctx, m))
	}
	// Warm up every path (and the exporter's buffers) before measuring.
	handle("email")
	handle("invoice")
	handle("warm-up-unregistered")
	scrape(t, handler)
	before := heapInUse()

	const hostile = 20_000
	padding := strings.Repeat("x", 200)
	for i := range hostile {
		handle(fmt.Sprintf("evil-%05d-%s", i, padding))
		if i%1000 == 0 {
			handle("email")
		}
	}
	exposition := scrape(t, handler)
	grown := int64(heapInUse()) - int64(before)
	t.Logf("after %d sender-chosen job types: live heap grew %d bytes, one scrape is %d bytes", hostile, grown, len(exposition))

	require.Less(t, grown, int64(1<<20), "live heap growth after %d distinct job types", hostile)
	require.Less(t, len(exposition), 32<<10, "one /metrics answer")
	q := `messaging_destination_name="orders"`
	require.ElementsMatch(t, []string{
		`sqsworker_messages_finished_total{` + q + `,otel_scope_name="` + otelsqsworker.ScopeName + `",otel_scope_schema_url="",otel_scope_version="",sqsworker_job_type="email",sqsworker_outcome="delete"}`,
		`sqsworker_messages_finished_total{` + q + `,otel_scope_name="` + otelsqsworker.ScopeName + `",otel_scope_schema_url="",otel_scope_version="",sqsworker_job_type="invoice",sqsworker_outcome="delete"}`,
		`sqsworker_messages_finished_total{` + q + `,otel_scope_name="` + otelsqsworker.ScopeName + `",otel_scope_schema_url="",otel_scope_version="",sqsworker_job_type="unregistered",sqsworker_outcome="dead-letter",sqsworker_reason="UnknownJobType"}`,
	}, seriesOf(exposition, "sqsworker_messages_finished_total"))
	require.Contains(t, exposition, `sqsworker_job_type="email",sqsworker_outcome="delete"} 21`)
	require.Contains(t, exposition, `sqsworker_job_type="unregistered",sqsworker_outcome="dead-letter",sqsworker_reason="UnknownJobType"} 20001`)
	require.Len(t, seriesOf(exposition, "sqsworker_handler_duration_seconds_count"), 3)
}

// TestMetricsBoundQueueNamesAndReasons: a queue label comes from the message's queue URL
// (on Lambda, from the record's event source ARN, which whoever invokes the function
// writes), and some reasons name what a message pointed at. 1,000 distinct queue names,
// names SQS would refuse and a 1,000-byte reason stay within MaxQueues queue labels, each
// a valid queue name, and reasons of at most MaxReasonLength bytes.
func TestMetricsBoundQueueNamesAndReasons(t *testing.T) {
	provider, handler, err := otelprom.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider, Registered: emailRegistered})
	require.NoError(t, err)
	ctx := context.Background()
	for i := range 1000 {
		m := newMessage("email")
		m.QueueURL = fmt.Sprintf("https://sqs.us-east-1.amazonaws.com/123456789012/queue-%04d", i)
		life(ctx, metrics, m, nil)
	}
	for _, name := range []string{strings.Repeat("q", 81), "a b", "évier", ".fifo", `x"}`} {
		m := newMessage("email")
		m.QueueURL = "https://sqs.us-east-1.amazonaws.com/123456789012/" + name
		life(ctx, metrics, m, nil)
	}
	long := strings.Repeat("é", 500) // 1,000 bytes
	life(ctx, metrics, newMessage("email"), sqsworker.Permanent(long, errors.New("bad")))

	exposition := scrape(t, handler)
	queues := map[string]bool{}
	for _, series := range seriesOf(exposition, "sqsworker_messages_received_total") {
		_, rest, _ := strings.Cut(series, `messaging_destination_name="`)
		name, _, _ := strings.Cut(rest, `"`)
		queues[name] = true
	}
	require.Len(t, queues, otelsqsworker.MaxQueues+1, "queue-0000 to queue-0063 and other")
	require.True(t, queues["queue-0000"] && queues["queue-0063"] && queues[otelsqsworker.LabelOther])
	require.False(t, queues["queue-0064"])
	// 936 names past the first 64, the 5 names SQS refuses, and the reason's message
	// (queue "orders", a 1,001st name).
	received := `sqsworker_messages_received_total{messaging_destination_name="other",otel_scope_name="` + otelsqsworker.ScopeName + `",otel_scope_schema_url="",otel_scope_version=""} 942`
	require.True(t, strings.Contains(exposition, received), "no line %s", received)
	cut := strings.Repeat("é", otelsqsworker.MaxReasonLength/2)
	require.True(t, strings.Contains(exposition, `sqsworker_reason="`+cut+`"} 1`), "no reason cut to %d bytes", otelsqsworker.MaxReasonLength)
	require.False(t, strings.Contains(exposition, cut+"é"), "a reason longer than %d bytes", otelsqsworker.MaxReasonLength)
}
