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
