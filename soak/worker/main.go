// Command worker is the soak test's worker process: the poller with the idempotency
// middleware on DynamoDB, running a handler whose side effect is recorded outside the
// process, by the soak driver's counter server. The driver (go run ./soak) builds it,
// starts three of them, kills and drains them, and checks the result.
//
// The handler reads a job {"key","fault","work_ms"} from the body and:
//
//   - fault "poison": always fails with a plain error (retried until the redrive policy
//     moves the message to the dead-letter queue after maxReceiveCount receives);
//   - fault "permanent": fails with sqsworker.Permanent (sent to the dead-letter queue
//     at once, with the failure attributes);
//   - fault "transient": fails on its first receive only;
//   - otherwise: works for work_ms, then performs the side effect: POST /effect to the
//     counter server with an Idempotency-Key header.
//
// Every delivery is reported first (POST /delivery, outermost, before the idempotency
// middleware), so the driver can account for receives lost to SIGKILL.
//
// Configuration (environment): SOAK_QUEUE_URL, SOAK_TABLE, SOAK_COUNTER_URL,
// SOAK_CONCURRENCY (default 10), SOAK_HANDLER_TIMEOUT (default 8s), SOAK_WAIT_TIME
// (default 2s), SOAK_DRAIN_TIMEOUT (default 5s), SOAK_BACKOFF_BASE (default 500ms),
// SOAK_BACKOFF_CAP (default 2s), plus the standard AWS variables.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/poller"
)

// Job is a soak message body.
type Job struct {
	Key    string `json:"key"`
	Fault  string `json:"fault"`
	WorkMS int    `json:"work_ms"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "soak worker:", err)
		os.Exit(1)
	}
}

func run() error {
	queueURL, table, counterURL := os.Getenv("SOAK_QUEUE_URL"), os.Getenv("SOAK_TABLE"), os.Getenv("SOAK_COUNTER_URL")
	if queueURL == "" || table == "" || counterURL == "" {
		return errors.New("SOAK_QUEUE_URL, SOAK_TABLE and SOAK_COUNTER_URL are required")
	}
	ctx := context.Background()
	awsConfig, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	counter := &counterClient{
		base: counterURL,
		pid:  strconv.Itoa(os.Getpid()),
		http: &http.Client{
			Timeout:   5 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: 64},
		},
	}
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(awsConfig), table)
	handler := sqsworker.Chain(sqsworker.HandlerFunc(counter.handle),
		counter.recordDelivery,
		idempotency.Middleware(store, idempotency.Config{
			KeyFunc: idempotency.KeyFromJSONField("key"),
			Logger:  logger,
		}),
	)
	server, err := poller.New(sqs.NewFromConfig(awsConfig), poller.Config{
		QueueURL:       queueURL,
		Concurrency:    envInt("SOAK_CONCURRENCY", 10),
		WaitTime:       envDuration("SOAK_WAIT_TIME", 2*time.Second),
		HandlerTimeout: envDuration("SOAK_HANDLER_TIMEOUT", 8*time.Second),
		DrainTimeout:   envDuration("SOAK_DRAIN_TIMEOUT", 5*time.Second),
		Backoff: sqsworker.Backoff{
			Base: envDuration("SOAK_BACKOFF_BASE", 500*time.Millisecond),
			Cap:  envDuration("SOAK_BACKOFF_CAP", 2*time.Second),
		},
		Logger: logger,
	}, handler)
	if err != nil {
		return err
	}
	if err := server.Run(ctx); err != nil {
		return err
	}
	stats := server.Stats()
	fmt.Fprintf(os.Stderr, "soak worker %d: drained: received=%d deleted=%d failed=%d deferred=%d dead_lettered=%d released=%d\n",
		os.Getpid(), stats.Received, stats.Deleted, stats.Failed, stats.Deferred, stats.DeadLettered, stats.Released)
	return nil
}

// counterClient talks to the driver's counter server.
type counterClient struct {
	base string
	pid  string
	http *http.Client
}

// recordDelivery is the outermost middleware: it reports every delivery (key and
// receive count) before anything else runs.
func (c *counterClient) recordDelivery(next sqsworker.Handler) sqsworker.Handler {
	return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		var job Job
		_ = json.Unmarshal([]byte(message.Body), &job)
		if err := c.post(ctx, "/delivery", job.Key, map[string]string{
			"X-Soak-Receive-Count": strconv.Itoa(message.ReceiveCount),
			"X-Soak-Message-Id":    message.ID,
		}); err != nil {
			return err
		}
		return next.Handle(ctx, message)
	})
}

// handle is the job handler, run under the idempotency middleware.
func (c *counterClient) handle(ctx context.Context, message *sqsworker.Message) error {
	var job Job
	if err := json.Unmarshal([]byte(message.Body), &job); err != nil {
		return sqsworker.Permanent("MalformedBody", err)
	}
	switch job.Fault {
	case "poison":
		return fmt.Errorf("soak: poison message %s", job.Key)
	case "permanent":
		return sqsworker.Permanent("SoakPermanent", fmt.Errorf("soak: permanent failure of %s", job.Key))
	case "transient":
		if message.ReceiveCount <= 1 {
			return fmt.Errorf("soak: transient failure of %s on receive %d", job.Key, message.ReceiveCount)
		}
	}
	if job.WorkMS > 0 {
		select {
		case <-time.After(time.Duration(job.WorkMS) * time.Millisecond):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	// One id per handler attempt, so the counter tells a transport's resend of this
	// request from a second attempt.
	return c.post(ctx, "/effect", job.Key, map[string]string{"X-Soak-Attempt": rand.Text()})
}

func (c *counterClient) post(ctx context.Context, path, key string, headers map[string]string) error {
	request, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(nil))
	if err != nil {
		return err
	}
	request.Header.Set("Idempotency-Key", key)
	request.Header.Set("X-Soak-PID", c.pid)
	for name, value := range headers {
		request.Header.Set(name, value)
	}
	response, err := c.http.Do(request)
	if err != nil {
		return fmt.Errorf("soak: counter %s: %w", path, err)
	}
	response.Body.Close()
	if response.StatusCode/100 != 2 {
		return fmt.Errorf("soak: counter %s: HTTP %d", path, response.StatusCode)
	}
	return nil
}

func envInt(name string, fallback int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return fallback
}

func envDuration(name string, fallback time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return fallback
}
