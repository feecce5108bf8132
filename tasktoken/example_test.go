package tasktoken_test

import (
	"context"
	"errors"
	"log"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/tasktoken"
)

// The README's task-token worker: a state machine's Task state sends
// {"order.$": "$.order", "taskToken.$": "$$.Task.Token"} to the queue; the middleware
// answers the task from the handler's outcome.
func ExampleNew() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	queues := sqs.NewFromConfig(cfg)
	queueURL, tableName := os.Getenv("QUEUE_URL"), os.Getenv("TABLE")
	type charge struct {
		Order string `json:"order"`
	}
	charged := sqsworker.JSONHandler(func(ctx context.Context, job charge) error {
		if job.Order == "" {
			return sqsworker.Permanent("Order.Missing", errors.New("no order")) // the error name a Catch matches
		}
		return tasktoken.SetOutput(ctx, map[string]string{"charged": job.Order}) // the state's output
	})
	answer, err := tasktoken.New(tasktoken.Config{
		API:               sfn.NewFromConfig(cfg),
		Token:             tasktoken.BodyField("taskToken"), // or tasktoken.Attribute("TaskToken")
		HeartbeatInterval: 20 * time.Second,                 // a third of the state's HeartbeatSeconds (60)
		Queues:            queues,                           // reads maxReceiveCount: the last attempt reports the failure
	})
	if err != nil {
		log.Fatal(err)
	}
	// Outside the task-token middleware, keyed by the message id: a state machine's Retry
	// of a step sends a new message with a new token, which must run and be answered.
	records := idempotency.Middleware(idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), tableName),
		idempotency.Config{KeyFunc: idempotency.KeyFromMessageID})
	worker, err := poller.New(queues, poller.Config{QueueURL: queueURL}, sqsworker.Chain(charged, records, answer))
	if err != nil {
		log.Fatal(err)
	}
	if err := worker.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
