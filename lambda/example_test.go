package lambda_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
)

func ExampleNewBatchHandler() {
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		var order struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(m.Body), &order); err != nil {
			// No retry can fix this body: to the dead-letter queue at once.
			return sqsworker.Permanent("MalformedBody", err)
		}
		return nil // deleted by Lambda
	})
	batch, err := lambda.NewBatchHandler(handler,
		lambda.WithConcurrency(5),
		lambda.WithDeadlineMargin(3*time.Second),
		lambda.WithBackoff(sqsworker.Backoff{Base: 5 * time.Second, Cap: 15 * time.Minute}),
		lambda.WithLogger(slog.New(slog.NewJSONHandler(os.Stdout, nil))))
	if err != nil {
		log.Fatal(err) // every problem of the options, one per line
	}
	// In main: lambda.Start blocks and serves invocations.
	start := func() { awslambda.Start(batch.Handle) }
	_ = start
}

// A bad option is an error, with the text poller.New gives for the same setting.
func ExampleNewBatchHandler_badOption() {
	handler := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil })
	_, err := lambda.NewBatchHandler(handler,
		lambda.WithConcurrency(0),
		lambda.WithBackoff(sqsworker.Backoff{Base: time.Minute, Cap: time.Second}))
	fmt.Println(err)
	// Output:
	// lambda: Concurrency 0 is below 1
	// lambda: Backoff.Base 1m0s exceeds Backoff.Cap 1s
}

// sendWebhook is the handler of the package comment's example.
func sendWebhook(ctx context.Context, m *sqsworker.Message) error { return nil }

// main is the package comment's example (in a package main of its own).
func main() {
	handler := sqsworker.HandlerFunc(sendWebhook)
	batch, err := lambda.NewBatchHandler(handler,
		lambda.WithConcurrency(5),
		lambda.WithLogger(slog.New(slog.NewJSONHandler(os.Stdout, nil))))
	if err != nil {
		log.Fatal(err) // the function's init fails, with every problem in its log
	}
	awslambda.Start(batch.Handle)
}

// The package comment's function: main above, started by the Lambda runtime.
func Example() {
	_ = main
}
