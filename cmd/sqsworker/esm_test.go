package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

func TestESMUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "no queue", args: []string{"esm"}, want: "accepts 1 arg"},
		{name: "large batch without window", args: []string{"esm", "q", "--batch-size", "11"}, want: "needs a BatchingWindow"},
		{name: "window too long", args: []string{"esm", "q", "--batching-window", "6m"}, want: "BatchingWindow 6m0s"},
		{name: "empty function URL", args: []string{"esm", "q", "--function-url", ""}, want: "empty function URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tc.args, &stdout, &stderr); code != exitUsage {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, exitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr does not mention %q:\n%s", tc.want, stderr.String())
			}
		})
	}
}

// TestESMCommand runs `sqsworker esm` against the emulator with a stub function that
// fails the second message, with and without --report-batch-item-failures.
func TestESMCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		flags      []string
		wantOutput string
		// wantInFlight is how many messages stay in flight (left for a retry) after the batch.
		wantInFlight int
	}{
		{name: "partial batch response", wantOutput: "invocations 1, failed batches 0, deleted 2, left for retry 1", wantInFlight: 1},
		{name: "mapping without ReportBatchItemFailures", flags: []string{"--report-batch-item-failures=false"},
			wantOutput: "invocations 1, failed batches 0, deleted 3, left for retry 0", wantInFlight: 0},
		{name: "json output", flags: []string{"--output", "json"}, wantInFlight: 1,
			wantOutput: "{\n  \"invocations\": 1,\n  \"failed_batches\": 0,\n  \"deleted\": 2,\n  \"retried\": 1\n}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
			for _, body := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
				if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: aws.String(body)}); err != nil {
					t.Fatal(err)
				}
			}
			var answered atomic.Int32
			function := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				payload, _ := io.ReadAll(r.Body)
				var event events.SQSEvent
				_ = json.Unmarshal(payload, &event)
				failures := []events.SQSBatchItemFailure{}
				for _, record := range event.Records {
					if record.Body == `{"n":2}` {
						failures = append(failures, events.SQSBatchItemFailure{ItemIdentifier: record.MessageId})
					}
				}
				_ = json.NewEncoder(w).Encode(events.SQSEventResponse{BatchItemFailures: failures})
				answered.Add(1)
			}))
			defer function.Close()

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := make(chan int, 1)
			args := append([]string{"esm", queue.URL, "--function-url", function.URL, "--batch-size", "3", "--batching-window", "1s"}, tc.flags...)
			go func() { code <- run(ctx, args, &stdout, &stderr) }()
			// Queue counts alone can match while the batch is still being gathered, so
			// wait for the function's answer too.
			testenv.Eventually(t, 15*time.Second, "the batch settled", func() bool {
				visible, inFlight := testenv.Counts(t, client, queue.URL)
				return answered.Load() > 0 && visible == 0 && inFlight == tc.wantInFlight
			})
			cancel()
			if got := <-code; got != exitOK {
				t.Fatalf("exit code %d; stderr:\n%s", got, stderr.String())
			}
			if got := strings.TrimSpace(stdout.String()); got != tc.wantOutput {
				t.Errorf("output %q, want %q", got, tc.wantOutput)
			}
		})
	}
}
