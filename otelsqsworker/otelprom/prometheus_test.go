package otelprom_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/otelsqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelprom"
	"github.com/sqsworker/sqsworker/poller"
)

// prometheusBinary is Debian's package (localstack/prometheus-up installs it).
func prometheusBinary(t *testing.T) string {
	binary := os.Getenv("SQSWORKER_PROMETHEUS")
	if binary == "" {
		binary = "/usr/bin/prometheus"
	}
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("no Prometheus server at %s (run localstack/prometheus-up): %v", binary, err)
	}
	return binary
}

// startPrometheus runs a Prometheus server on 127.0.0.1 scraping target every second,
// and returns its address once it is ready.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	dir := t.TempDir()
	config := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: worker\n    metrics_path: %s\n    static_configs:\n      - targets: [%q]\n", poller.MetricsPath, target)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600))
	// Prometheus cannot report a port it chose, so take a free one and hand it over.
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	address := listener.Addr().String()
	require.NoError(t, listener.Close())
	cmd := exec.Command(prometheusBinary(t),
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+address,
		"--log.level=warn")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			t.Fatalf("prometheus exited: %v\n%s", err, logs.String())
		default:
		}
		response, err := http.Get("http://" + address + "/-/ready")
		if err == nil {
			response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return address
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready on %s after 60s\n%s", address, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// query runs an instant PromQL query and returns each series' value by the label given.
func query(t *testing.T, address, promql, label string) map[string]int {
	t.Helper()
	response, err := http.Get("http://" + address + "/api/v1/query?query=" + url.QueryEscape(promql))
	require.NoError(t, err)
	defer response.Body.Close()
	var body struct {
		Status string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	require.NoError(t, json.NewDecoder(response.Body).Decode(&body))
	require.Equal(t, "success", body.Status)
	out := map[string]int{}
	for _, series := range body.Data.Result {
		value, err := strconv.ParseFloat(series.Value[1].(string), 64)
		require.NoError(t, err)
		out[series.Metric[label]] = int(value)
	}
	return out
}

// TestPrometheusScrapesWorker: a real Prometheus server scrapes a poller's /metrics
// while it handles 7 messages that succeed, 3 that fail permanently and 2 that fail
// once and then succeed; PromQL then returns exactly those counts by outcome.
func TestPrometheusScrapesWorker(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	ctx := context.Background()

	provider, handler, err := otelprom.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider})
	require.NoError(t, err)

	server, err := poller.New(client, poller.Config{
		QueueURL:           queue.URL,
		Observer:           metrics,
		Backoff:            sqsworker.Backoff{Base: time.Second, Cap: time.Second, Jitter: sqsworker.JitterNone},
		HealthCheckAddress: "127.0.0.1:0",
		MetricsHandler:     handler,
		WaitTime:           time.Second,
		Logger:             slog.New(slog.DiscardHandler),
	}, sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		switch {
		case strings.HasPrefix(m.Body, "permanent"):
			return sqsworker.Permanent("Invalid", errors.New("bad job"))
		case strings.HasPrefix(m.Body, "flaky") && m.ReceiveCount == 1:
			return errors.New("transient")
		}
		return nil
	}))
	require.NoError(t, err)
	require.NoError(t, server.Start(ctx))
	runDone := make(chan error, 1)
	go func() { runDone <- server.Run(ctx) }()
	t.Cleanup(func() {
		_ = server.Shutdown(context.Background())
		<-runDone
	})
	prometheus := startPrometheus(t, server.HealthCheckAddress())

	var bodies []string
	for i := range 7 {
		bodies = append(bodies, fmt.Sprintf("ok-%d", i))
	}
	for i := range 3 {
		bodies = append(bodies, fmt.Sprintf("permanent-%d", i))
	}
	bodies = append(bodies, "flaky-0", "flaky-1")
	for _, body := range bodies {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: aws.String(body)})
		require.NoError(t, err)
	}
	// 9 handled, 3 dead-lettered (each deleted after its send): 12 deletes. The retries
	// wait out a 1 s visibility, so 60 s is generous on a loaded machine.
	testenv.Eventually(t, 60*time.Second, "12 deletes", func() bool { return server.Stats().Deleted == 12 })

	name := otelsqsworker.QueueName(queue.URL)
	promql := fmt.Sprintf(`sum by (sqsworker_outcome) (sqsworker_messages_finished_total{messaging_destination_name=%q})`, name)
	want := map[string]int{"delete": 9, "dead-letter": 3, "retry": 2}
	var got map[string]int
	// Scrapes run every second; wait for one that saw every message.
	testenv.Eventually(t, 30*time.Second, "Prometheus shows every outcome", func() bool {
		got = query(t, prometheus, promql, "sqsworker_outcome")
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
	require.Equal(t, want, got)
	reasons := query(t, prometheus, fmt.Sprintf(`sum by (sqsworker_reason) (sqsworker_messages_finished_total{messaging_destination_name=%q, sqsworker_outcome!="delete"})`, name), "sqsworker_reason")
	require.Equal(t, map[string]int{"Invalid": 3, "HandlerError": 2}, reasons)
	sends := query(t, prometheus, fmt.Sprintf(`sum(sqsworker_dead_letter_sends_total{messaging_destination_name=%q})`, name), "")
	require.Equal(t, map[string]int{"": 3}, sends)
}

// TestPrometheusLabelsOnlyRegisteredJobTypes: a poller on the emulator runs a mux that
// registers "email"; 5 email jobs and 20 messages whose senders chose 20 distinct job
// types (one of 10,000 bytes) go through it. Its /metrics then holds exactly two finished
// series: email deleted 5 times and "unregistered" dead-lettered 20 times as
// UnknownJobType; no sender-chosen type appears in the answer.
func TestPrometheusLabelsOnlyRegisteredJobTypes(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	ctx := context.Background()

	provider, handler, err := otelprom.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("email", func(context.Context, *sqsworker.Message) error { return nil })
	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider, Registered: mux.Registered})
	require.NoError(t, err)
	server, err := poller.New(client, poller.Config{
		QueueURL:           queue.URL,
		Observer:           metrics,
		HealthCheckAddress: "127.0.0.1:0",
		MetricsHandler:     handler,
		WaitTime:           time.Second,
		Logger:             slog.New(slog.DiscardHandler),
	}, mux)
	require.NoError(t, err)
	require.NoError(t, server.Start(ctx))
	runDone := make(chan error, 1)
	go func() { runDone <- server.Run(ctx) }()
	t.Cleanup(func() {
		_ = server.Shutdown(context.Background())
		<-runDone
	})

	send := func(jobType string) {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl:    aws.String(queue.URL),
			MessageBody: aws.String("{}"),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{
				sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String(jobType)},
			},
		})
		require.NoError(t, err)
	}
	hostile := []string{"evil-" + strings.Repeat("x", 10_000)}
	for i := range 19 {
		hostile = append(hostile, fmt.Sprintf("evil-%02d", i))
	}
	for _, jobType := range hostile {
		send(jobType)
	}
	for range 5 {
		send("email")
	}
	testenv.Eventually(t, 60*time.Second, "25 deletes", func() bool { return server.Stats().Deleted == 25 })

	response, err := http.Get("http://" + server.HealthCheckAddress() + poller.MetricsPath)
	require.NoError(t, err)
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	exposition := string(body)
	require.False(t, strings.Contains(exposition, "evil-"), "a sender-chosen job type is a label value")
	name := otelsqsworker.QueueName(queue.URL)
	finished := map[string]string{}
	for line := range strings.SplitSeq(exposition, "\n") {
		if !strings.HasPrefix(line, "sqsworker_messages_finished_total{") {
			continue
		}
		labels, value, _ := strings.Cut(line, "} ")
		require.Contains(t, labels, `messaging_destination_name="`+name+`"`)
		_, labels, _ = strings.Cut(labels, `otel_scope_version="",`)
		finished[labels] = value
	}
	require.Equal(t, map[string]string{
		`sqsworker_job_type="email",sqsworker_outcome="delete"`:                                               "5",
		`sqsworker_job_type="unregistered",sqsworker_outcome="dead-letter",sqsworker_reason="UnknownJobType"`: "20",
	}, finished)
}
