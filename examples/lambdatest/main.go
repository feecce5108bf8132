// Command lambdatest is the tiny Lambda function the end-to-end tests run in the Runtime
// Interface Emulator (internal/testing/rie) behind the local event source mapping (lambda/localesm).
// Its behaviour comes from environment variables:
//
//	LAMBDATEST_MODE                   "adapter" (default): lambda.NewBatchHandler with the job
//	                                  handler below; "stub": return LAMBDATEST_STUB_RESPONSE verbatim
//	LAMBDATEST_STUB_RESPONSE          the raw JSON the stub returns
//	LAMBDATEST_LOG                    file to append one JSON line per handler call and per effect
//	LAMBDATEST_BACKOFF_BASE, _CAP     backoff policy without jitter (Go durations)
//	LAMBDATEST_CONCURRENCY            lambda.WithConcurrency
//	LAMBDATEST_REPORT_BATCH_ITEM_FAILURES=false   lambda.WithReportBatchItemFailures(false)
//	LAMBDATEST_ENTIRE_BATCH_FAILURE_ERROR=true    lambda.WithEntireBatchFailureError(true)
//	LAMBDATEST_IDEMPOTENCY_TABLE      wrap the handler in the idempotency middleware (DynamoDB)
//
// A job body is JSON: {"key":"A-1","poison":true,"permanent":true,"sleep_ms":300}.
// "poison" fails every attempt with an ordinary error, "permanent" with a permanent one;
// otherwise the job sleeps sleep_ms and then commits its effect (a line in the log).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strconv"
	"time"

	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
)

type job struct {
	Key       string `json:"key"`
	Poison    bool   `json:"poison"`
	Permanent bool   `json:"permanent"`
	SleepMS   int    `json:"sleep_ms"`
}

// entry is one line of the LAMBDATEST_LOG file (internal/testing/esmtest.Entry reads it).
type entry struct {
	Event        string `json:"event"` // "call" or "effect"
	UnixMilli    int64  `json:"t"`
	MessageID    string `json:"message_id"`
	Key          string `json:"key"`
	ReceiveCount int    `json:"receive_count"`
}

func main() {
	if os.Getenv("LAMBDATEST_MODE") == "stub" {
		response := json.RawMessage(os.Getenv("LAMBDATEST_STUB_RESPONSE"))
		awslambda.Start(func(context.Context, json.RawMessage) (json.RawMessage, error) { return response, nil })
		return
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	options := []lambda.Option{lambda.WithLogger(logger)}
	if base := os.Getenv("LAMBDATEST_BACKOFF_BASE"); base != "" {
		backoff := sqsworker.Backoff{Base: mustDuration(base), Jitter: sqsworker.JitterNone}
		if limit := os.Getenv("LAMBDATEST_BACKOFF_CAP"); limit != "" {
			backoff.Cap = mustDuration(limit)
		}
		options = append(options, lambda.WithBackoff(backoff))
	}
	if text := os.Getenv("LAMBDATEST_CONCURRENCY"); text != "" {
		n, err := strconv.Atoi(text)
		if err != nil {
			log.Fatalf("lambdatest: LAMBDATEST_CONCURRENCY: %v", err)
		}
		options = append(options, lambda.WithConcurrency(n))
	}
	if os.Getenv("LAMBDATEST_ENTIRE_BATCH_FAILURE_ERROR") == "true" {
		options = append(options, lambda.WithEntireBatchFailureError(true))
	}
	if os.Getenv("LAMBDATEST_REPORT_BATCH_ITEM_FAILURES") == "false" {
		options = append(options, lambda.WithReportBatchItemFailures(false))
	}
	handler, err := withIdempotency(sqsworker.HandlerFunc(handle))
	if err != nil {
		log.Fatalf("lambdatest: %v", err)
	}
	batch, err := lambda.NewBatchHandler(handler, options...)
	if err != nil {
		log.Fatalf("lambdatest: %v", err)
	}
	awslambda.Start(batch.Handle)
}

func handle(ctx context.Context, m *sqsworker.Message) error {
	var j job
	if err := json.Unmarshal([]byte(m.Body), &j); err != nil {
		return sqsworker.Permanent("MalformedBody", err)
	}
	record("call", m, j.Key)
	switch {
	case j.Permanent:
		return sqsworker.Permanent("PoisonPill", fmt.Errorf("job %s can never succeed", j.Key))
	case j.Poison:
		return errors.New("poison job " + j.Key)
	}
	select {
	case <-time.After(time.Duration(j.SleepMS) * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	record("effect", m, j.Key)
	return nil
}

// record appends one line to the log file with a single write, so lines from concurrent
// handlers and processes never interleave.
func record(event string, m *sqsworker.Message, key string) {
	path := os.Getenv("LAMBDATEST_LOG")
	if path == "" {
		return
	}
	line, _ := json.Marshal(entry{Event: event, UnixMilli: time.Now().UnixMilli(), MessageID: m.ID, Key: key, ReceiveCount: m.ReceiveCount})
	file, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		log.Printf("lambdatest: %v", err)
		return
	}
	defer file.Close()
	if _, err := file.Write(append(line, '\n')); err != nil {
		log.Printf("lambdatest: %v", err)
	}
}

func mustDuration(text string) time.Duration {
	d, err := time.ParseDuration(text)
	if err != nil {
		log.Fatalf("lambdatest: %v", err)
	}
	return d
}
