package poller_test

import (
	"context"
	"encoding/json"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/poller"
)

// A container worker: Run returns nil after a graceful drain on SIGTERM, so the
// process exits with code 0.
func ExampleServer_Run() {
	awsConfig, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	handler := sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		var job struct{ URL string }
		if err := json.Unmarshal([]byte(message.Body), &job); err != nil {
			return sqsworker.Permanent("MalformedBody", err) // to the dead-letter queue now
		}
		return nil // deleted
	})
	server, err := poller.New(sqs.NewFromConfig(awsConfig), poller.Config{
		QueueURL:           os.Getenv("QUEUE_URL"),
		Concurrency:        20,
		HandlerTimeout:     2 * time.Minute,
		Logger:             slog.New(slog.NewJSONHandler(os.Stderr, nil)),
		HealthCheckAddress: "127.0.0.1:8080",
	}, handler)
	if err != nil {
		log.Fatal(err) // every configuration problem, each naming its field
	}
	if err := server.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// Start and Shutdown, for a program that manages its own lifecycle.
func ExampleServer_Shutdown() {
	awsConfig, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	server, err := poller.New(sqs.NewFromConfig(awsConfig), poller.Config{QueueURL: os.Getenv("QUEUE_URL")},
		sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }))
	if err != nil {
		log.Fatal(err)
	}
	if err := server.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	// ... later: drain for at most 10 s, whatever Config.DrainTimeout says.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = server.Shutdown(ctx)
	log.Printf("deleted %d messages", server.Stats().Deleted)
}

// A `healthcheck` sub-command for a distroless image (no curl): the container's health
// check runs `/worker healthcheck`.
func ExampleCheckHealth() {
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		if err := poller.CheckHealth(context.Background(), "127.0.0.1:8080"); err != nil {
			log.Print(err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// deliver is the work of the package comment's example.
func deliver(ctx context.Context, body string) error { return ctx.Err() }

// The package comment's worker.
func Example() {
	var awsConfig aws.Config // config.LoadDefaultConfig(ctx)
	queueURL := os.Getenv("QUEUE_URL")
	run := func() {
		client := sqs.NewFromConfig(awsConfig)
		handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
			return deliver(ctx, m.Body) // nil deletes; see sqsworker.Classify for errors
		})
		server, err := poller.New(client, poller.Config{
			QueueURL:           queueURL,
			HealthCheckAddress: "127.0.0.1:8080",
		}, handler)
		if err != nil {
			log.Fatal(err) // every configuration problem, each naming its field
		}
		if err := server.Run(context.Background()); err != nil { // drains on SIGTERM/SIGINT
			log.Fatal(err)
		}
	}
	_ = run
}

// Receipt and PartnerCall are the jobs of the several-queues example.
type (
	Receipt     struct{ OrderID string }
	PartnerCall struct{ Endpoint string }
)

func sendReceipt(ctx context.Context, job Receipt) error     { return ctx.Err() }
func callPartner(ctx context.Context, job PartnerCall) error { return ctx.Err() }

// Several queues in one worker: one pool of 20 slots shared 60/30/10 by weight while
// all three have messages, 2 of them reserved for the critical queue and at most 4 for
// the low one, a reports queue with its own handler at most 5 per second,
// and a job type limited to 10 calls a second wherever it comes from.
func ExampleQueueConfig() {
	var client *sqs.Client // sqs.NewFromConfig(awsConfig)
	criticalURL, defaultURL, lowURL, reportsURL := os.Getenv("CRITICAL_URL"), os.Getenv("DEFAULT_URL"), os.Getenv("LOW_URL"), os.Getenv("REPORTS_URL")
	var reports sqsworker.Handler = sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error { return nil })
	run := func() {
		mux := sqsworker.NewServeMux()
		sqsworker.RegisterJSON(mux, "send-receipt", sendReceipt)
		sqsworker.RegisterJSON(mux, "call-partner", callPartner)

		server, err := poller.New(client, poller.Config{
			Concurrency: 20,
			Priority:    poller.Weighted, // or poller.Strict: a lower queue only while the higher ones are empty
			Queues: []poller.QueueConfig{
				{URL: criticalURL, Weight: 6, MinSlots: 2}, // 2 slots no other queue takes
				{URL: defaultURL, Weight: 3},
				{URL: lowURL, Weight: 1, MaxSlots: 4}, // at most 4 slots, however long its jobs
				{URL: reportsURL, Handler: reports, Limit: poller.Limit{RatePerSecond: 5}},
			},
			JobTypeLimits: map[string]poller.Limit{
				"call-partner": {RatePerSecond: 10}, // the partner's API allows 10 calls a second
			},
		}, mux) // the handler of every queue without its own
		if err != nil {
			log.Fatal(err) // every configuration problem, each naming its field
		}
		if err := server.Run(context.Background()); err != nil {
			log.Fatal(err)
		}
	}
	_ = run
}
