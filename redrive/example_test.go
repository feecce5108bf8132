package redrive_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/redrive"
)

// Move the dead letters that failed with HTTP 410 back to their queue, at most 100, at
// 50 messages per second.
func ExampleNewMover() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	mover, err := redrive.NewMover(client, redrive.Config{
		Source:        "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq",
		Destination:   "https://sqs.eu-west-1.amazonaws.com/123456789012/orders",
		Filter:        redrive.FailureReason("HTTP410"),
		MaxMessages:   100,
		RatePerSecond: 50,
	})
	if err != nil {
		log.Fatal(err)
	}
	result, err := mover.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("moved %d, skipped %d, left %d\n", result.Moved, result.Skipped, len(result.TooLarge)+len(result.SendFailed))
}

// Start a native move task back to the source queues and follow it.
func ExampleStartMoveTask() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	task, err := redrive.StartMoveTask(ctx, client, "orders-dlq", redrive.MoveTaskOptions{RatePerSecond: 100})
	if err != nil {
		log.Fatal(err) // errors.Is(err, redrive.ErrMoveTaskActive) when one already runs
	}
	final, err := redrive.WaitMoveTask(ctx, client, task, time.Second, func(t redrive.MoveTask) {
		log.Printf("%s: %d of %d moved", t.Status, t.Moved, t.ToMove)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(final.Status)
}

// The package comment's filtered move.
func Example() {
	var sqsClient *sqs.Client // sqs.NewFromConfig(cfg)
	dlqURL, queueURL := "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq", "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"
	move := func(ctx context.Context) error {
		mover, err := redrive.NewMover(sqsClient, redrive.Config{
			Source:      dlqURL,
			Destination: queueURL,
			Filter:      redrive.FailureReason("HTTP410"),
			MaxMessages: 100,
		})
		if err != nil {
			return err
		}
		result, err := mover.Run(ctx)
		if err != nil {
			return err
		}
		log.Printf("moved %d, left %d", result.Moved, len(result.TooLarge)+len(result.SendFailed))
		return nil
	}
	_ = move
}
