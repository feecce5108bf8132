package scheduler_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/scheduler"
)

// The README's scheduled jobs: the scheduler beside the poller in one process. Every
// replica runs both; one leads the scheduler, the others stand by.
func Example_besidePoller() {
	var sqsClient *sqs.Client          // sqs.NewFromConfig(awsConfig)
	var dynamoClient *dynamodb.Client  // dynamodb.NewFromConfig(awsConfig)
	queueURL := os.Getenv("QUEUE_URL") // the queue the schedules name
	ctx := context.Background()
	run := func() {
		schedules, err := scheduler.ReadSchedules("schedules.json") // the file the Terraform module reads too
		if err != nil {
			log.Fatal(err)
		}
		ticks, err := scheduler.New(sqsClient, dynamoClient, scheduler.Config{Table: "jobs-idempotency"}, schedules)
		if err != nil {
			log.Fatal(err)
		}
		if err := ticks.Start(ctx); err != nil {
			log.Fatal(err)
		}

		// A tick is enqueued at least once; its idempotency record (keyed by the tick id,
		// the message's idempotency key) runs the handler once per tick.
		once := idempotency.Middleware(idempotency.NewDynamoDBStore(dynamoClient, "jobs-idempotency"), idempotency.Config{})
		mux := sqsworker.NewServeMux(sqsworker.RouteByJSONField(scheduler.JobTypeField)) // EventBridge-sent jobs too
		mux.RegisterFunc("nightly-report", func(ctx context.Context, m *sqsworker.Message) error {
			return nil // m's idempotency key is the tick id, "nightly-report/2026-12-01T01:30:00Z"
		}, sqsworker.JobMiddleware(once))
		worker, err := poller.New(sqsClient, poller.Config{QueueURL: queueURL}, mux)
		if err != nil {
			log.Fatal(err)
		}
		err = worker.Run(ctx)                    // until SIGTERM, then a graceful drain
		_ = ticks.Shutdown(context.Background()) // releases the lease: a standby takes over at once
		if err != nil {
			log.Fatal(err)
		}
	}
	_ = run
}

// A schedule's next runs in its time zone; the tick ids are stable across replicas.
func ExampleSchedule_NextRuns() {
	s := scheduler.Schedule{Name: "nightly-report", Cron: "30 2 * * *", TimeZone: "Europe/Berlin", JobType: "report", Queue: "reports"}
	runs, err := s.NextRuns(time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC), 2)
	if err != nil {
		log.Fatal(err)
	}
	for _, run := range runs {
		fmt.Println(scheduler.TickID(s.Name, run))
	}
	// Output:
	// nightly-report/2026-03-29T01:00:00Z
	// nightly-report/2026-03-30T00:30:00Z
}
