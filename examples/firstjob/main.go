// Command firstjob is the smallest complete sqsworker program: two job types on one
// queue, a producer that enqueues one job of each, and a container worker that runs
// them, then stops.
//
//	make up && eval "$(localstack/env)"   # the local emulator, and its endpoints
//	go run ./examples/firstjob
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// WelcomeEmail is the payload of a "welcome-email" job.
type WelcomeEmail struct {
	To string `json:"to"`
}

// ResizeImage is the payload of a "resize-image" job.
type ResizeImage struct {
	URL   string `json:"url"`
	Width int    `json:"width"`
}

func main() {
	ctx := context.Background()
	awsConfig, err := config.LoadDefaultConfig(ctx) // AWS_ENDPOINT_URL_SQS points it at the emulator
	if err != nil {
		log.Fatal(err)
	}
	client := sqs.NewFromConfig(awsConfig)
	queueURL, err := createQueue(ctx, client, "firstjob") // and its dead-letter queue
	if err != nil {
		log.Fatal(err)
	}
	if err := run(ctx, client, queueURL, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run enqueues one job of each type to queueURL and works the queue until both ran.
func run(ctx context.Context, client *sqs.Client, queueURL string, out io.Writer) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan struct{}, 2)

	// 1. The job types: a function each, taking its typed payload. A body that does
	// not decode into it, or a job type nobody registered, goes to the dead-letter queue.
	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "welcome-email", func(ctx context.Context, job WelcomeEmail) error {
		fmt.Fprintf(out, "welcome-email: sent to %s\n", job.To)
		ran <- struct{}{}
		return nil // nil deletes the message; an error retries it with backoff
	})
	sqsworker.RegisterJSON(mux, "resize-image", func(ctx context.Context, job ResizeImage) error {
		fmt.Fprintf(out, "resize-image: %s to %d px wide\n", job.URL, job.Width)
		ran <- struct{}{}
		return nil
	}, sqsworker.JobTimeout(30*time.Second))

	// 2. The producer: send one job of each type (the second one 2 s later).
	jobs, err := producer.New(client, producer.Config{})
	if err != nil {
		return err
	}
	id, err := jobs.Send(ctx, queueURL, producer.Job{Type: "welcome-email", Payload: WelcomeEmail{To: "ada@example.com"}})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "sent welcome-email as message %s\n", id)
	id, err = jobs.Send(ctx, queueURL, producer.Job{Type: "resize-image", Payload: ResizeImage{URL: "s3://photos/cat.png", Width: 640}, Delay: 2 * time.Second})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "sent resize-image as message %s, due in 2s\n", id)

	// 3. The worker: long-polls the queue and runs each job through the mux. In a real
	// service it runs until SIGTERM; here it stops once both jobs ran.
	worker, err := poller.New(client, poller.Config{QueueURL: queueURL, WaitTime: time.Second}, mux)
	if err != nil {
		return err
	}
	go func() {
		<-ran
		<-ran
		stop()
	}()
	return worker.Run(ctx)
}
