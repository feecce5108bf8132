package sqsworker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker"
)

type Invoice struct {
	OrderID string `json:"orderId"`
	Cents   int    `json:"cents"`
}

// A mux with two job types; both hosts run it like any handler (poller.New(client,
// config, mux), lambda.NewBatchHandler(mux)).
func ExampleServeMux() {
	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "invoice", func(ctx context.Context, job Invoice) error {
		fmt.Printf("invoice for %s: %d cents\n", job.OrderID, job.Cents)
		return nil
	}, sqsworker.JobTimeout(30*time.Second), sqsworker.JobBackoff(sqsworker.Backoff{Base: 10 * time.Second, Cap: time.Hour}))
	mux.RegisterFunc("cleanup", func(ctx context.Context, m *sqsworker.Message) error {
		return nil // a raw body
	})

	message := &sqsworker.Message{Body: `{"orderId":"A-7","cents":1250}`, MessageAttributes: map[string]sqsworker.MessageAttribute{
		sqsworker.AttributeJobType: {DataType: "String", StringValue: "invoice"},
	}}
	fmt.Println(mux.Handle(context.Background(), message))

	message.Body = `{"orderId":"A-7","amount":12.5}`
	fmt.Println(sqsworker.Classify(mux.Handle(context.Background(), message)).Reason)

	message.MessageAttributes[sqsworker.AttributeJobType] = sqsworker.MessageAttribute{DataType: "String", StringValue: "refund"}
	fmt.Println(mux.Handle(context.Background(), message))
	// Output:
	// invoice for A-7: 1250 cents
	// <nil>
	// MalformedBody
	// permanent failure (UnknownJobType): no handler for job type "refund" (registered: cleanup, invoice)
}

// A mux that routes by a field of the body, for producers that cannot set message
// attributes (an EventBridge Scheduler target's fixed input, for example).
func ExampleRouteByJSONField() {
	mux := sqsworker.NewServeMux(sqsworker.RouteByJSONField("type"))
	sqsworker.RegisterJSON(mux, "nightly-report", func(ctx context.Context, job struct {
		Day string `json:"day"`
	}) error {
		fmt.Println("report for", job.Day)
		return nil
	})
	err := mux.Handle(context.Background(), &sqsworker.Message{Body: `{"type":"nightly-report","day":"2026-12-01"}`})
	fmt.Println(err)
	// Output:
	// report for 2026-12-01
	// <nil>
}
