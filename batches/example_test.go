package batches_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/producer"
)

type pageJob struct {
	Order string
	Page  int
}

type zipJob struct{ Order string }

func render(ctx context.Context, job pageJob) error { return nil }

func zipPages(ctx context.Context, order string) error { return nil }

const queueURL = "https://sqs.eu-west-1.amazonaws.com/123456789012/pages"

// Render 500 pages, then zip them when the last one has succeeded.
func ExampleBatches_Open() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	db := dynamodb.NewFromConfig(cfg)
	// The callbacks are sent once through a unique key: the producer needs a unique store.
	jobs, err := producer.New(sqs.NewFromConfig(cfg), producer.Config{Unique: producer.NewDynamoDBUniqueStore(db, "sqsworker")})
	if err != nil {
		log.Fatal(err)
	}
	b, err := batches.New(db, jobs, batches.Config{Table: "sqsworker", Shards: 8})
	if err != nil {
		log.Fatal(err)
	}
	batch, err := b.Open(ctx, batches.Callbacks{
		Success:  &batches.CallbackJob{QueueURL: queueURL, Job: producer.Job{Type: "zip-pages", Payload: zipJob{Order: "o-42"}}},
		Complete: &batches.CallbackJob{QueueURL: queueURL, Job: producer.Job{Type: "pages-failed", Payload: zipJob{Order: "o-42"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	pages := make([]producer.Job, 500)
	for i := range pages {
		pages[i] = producer.Job{Type: "render-page", Payload: pageJob{Order: "o-42", Page: i + 1}}
	}
	if _, err := batch.Add(ctx, queueURL, pages...); err != nil { // counted before they are sent
		log.Fatal(err)
	}
	if err := batch.Seal(ctx); err != nil { // no more from outside: it may finish now
		log.Fatal(err)
	}
	fmt.Println("sqsworker batches show", batch.ID(), "--table sqsworker")
}

// The worker: batch jobs counted as they end; a job adds to its own batch.
func ExampleBatches_Middleware() {
	var b *batches.Batches // batches.New, as above
	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "render-page", func(ctx context.Context, job pageJob) error {
		if job.Page == 1 { // the cover needs a back page: added before this job ends
			batch, _ := batches.FromContext(ctx)
			if _, err := batch.Add(ctx, queueURL, producer.Job{Type: "render-page", Payload: pageJob{Order: job.Order, Page: 501}}); err != nil {
				return err
			}
		}
		return render(ctx, job)
	})
	sqsworker.RegisterJSON(mux, "zip-pages", func(ctx context.Context, job zipJob) error {
		return zipPages(ctx, job.Order)
	})
	var db *dynamodb.Client     // dynamodb.NewFromConfig(cfg), as above
	var jobs *producer.Producer // producer.New, as above: it re-sends a job not due yet
	// MaxReceiveCount: the queue's redrive policy, so a last failed attempt ends a job.
	// The idempotency records are kept as long as the batches' (Config.Retention), so each
	// success is counted in the transaction that completes its record: one write more.
	handler := sqsworker.Chain(mux,
		// Outside the batch: a job not due yet is re-sent, and not counted (a hop returns nil).
		sqsworker.DelayMiddleware(jobs),
		b.Middleware(batches.MiddlewareConfig{MaxReceiveCount: 5}),
		idempotency.Middleware(idempotency.NewDynamoDBStore(db, "sqsworker"), idempotency.Config{TTL: batches.DefaultRetention}))
	_ = handler // run it on a poller or in a Lambda function
}
