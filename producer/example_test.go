package producer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

func sendEmail(ctx context.Context, to string) error { return nil }

// The README's first job: a job type, a producer and a container worker.
func Example_firstJob() {
	ctx := context.Background()
	awsConfig, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := sqs.NewFromConfig(awsConfig)
	queueURL := os.Getenv("QUEUE_URL")

	type WelcomeEmail struct {
		To string `json:"to"`
	}

	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "welcome-email", func(ctx context.Context, job WelcomeEmail) error {
		return sendEmail(ctx, job.To) // nil deletes the message, an error retries it with backoff
	})

	jobs, err := producer.New(client, producer.Config{})
	if err != nil {
		log.Fatal(err)
	}
	id, err := jobs.Send(ctx, queueURL, producer.Job{Type: "welcome-email", Payload: WelcomeEmail{To: "ada@example.com"}})
	if err != nil {
		log.Fatal(err) // for example *producer.TooLargeError, naming the size and the limit
	}
	fmt.Println("sent", id)

	worker, err := poller.New(client, poller.Config{QueueURL: queueURL}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := worker.Run(ctx); err != nil { // nil after a graceful drain on SIGTERM: exit 0
		log.Fatal(err)
	}
}

// The package comment's producer and consumer.
func ExampleProducer_Send() {
	ctx, queueURL := context.Background(), os.Getenv("QUEUE_URL")
	awsConfig, _ := config.LoadDefaultConfig(ctx)
	run := func() (string, error) {
		jobs, err := producer.New(sqs.NewFromConfig(awsConfig), producer.Config{})
		id, err := jobs.Send(ctx, queueURL, producer.Job{Type: "welcome-email", Payload: WelcomeEmail{To: "ada@example.com"}})

		mux := sqsworker.NewServeMux()
		store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(awsConfig), "jobs-idempotency")
		handler := sqsworker.Chain(mux, sqsworker.DelayMiddleware(jobs), idempotency.Middleware(store, idempotency.Config{}))
		_ = handler // poller.New(client, poller.Config{QueueURL: queueURL}, handler)
		return id, err
	}
	_ = run
}

type WelcomeEmail struct {
	To string `json:"to"`
}

// Delays longer than SQS's 15 minutes hop: the worker's sqsworker.DelayMiddleware re-sends
// the job through the producer's Hop until it is due, so waiting counts no receives.
func ExampleProducer_Hop() {
	var client *sqs.Client // sqs.NewFromConfig(awsConfig)
	ctx, queueURL := context.Background(), os.Getenv("QUEUE_URL")
	jobs, _ := producer.New(client, producer.Config{})
	_, err := jobs.Send(ctx, queueURL, producer.Job{Type: "trial-ends", Payload: map[string]string{"account": "a-7"}, Delay: 14 * 24 * time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	mux := sqsworker.NewServeMux()
	handler := sqsworker.Chain(mux, sqsworker.DelayMiddleware(jobs)) // outermost
	_, _ = poller.New(client, poller.Config{QueueURL: queueURL}, handler)
}

// Unique jobs on a standard queue: of concurrent sends with one key, one is sent; the
// others learn its message id.
func ExampleDynamoDBUniqueStore() {
	awsConfig, _ := config.LoadDefaultConfig(context.Background())
	jobs, _ := producer.New(sqs.NewFromConfig(awsConfig), producer.Config{
		Unique: producer.NewDynamoDBUniqueStore(dynamodb.NewFromConfig(awsConfig), "jobs-unique"),
	})
	_, err := jobs.Send(context.Background(), os.Getenv("QUEUE_URL"), producer.Job{
		Type: "invoice", Payload: map[string]int{"order": 42}, UniqueKey: "invoice-42", UniqueFor: 24 * time.Hour,
	})
	if duplicate, ok := errors.AsType[*producer.DuplicateJobError](err); ok {
		fmt.Println("already sent as", duplicate.MessageID)
	}
}

// A unique job whose key is free again as soon as the job is done (it succeeded or was
// dead-lettered): UniqueMiddleware frees it on the consumer side.
func ExampleUniqueMiddleware() {
	awsConfig, _ := config.LoadDefaultConfig(context.Background())
	store := producer.NewDynamoDBUniqueStore(dynamodb.NewFromConfig(awsConfig), "jobs-idempotency")
	jobs, _ := producer.New(sqs.NewFromConfig(awsConfig), producer.Config{Unique: store})
	_, _ = jobs.Send(context.Background(), os.Getenv("QUEUE_URL"), producer.Job{
		Type: "report", Body: `{}`, UniqueKey: "report-2026-11", UniqueFor: time.Hour, UniqueMode: producer.UniqueUntilDone,
	})
	mux := sqsworker.NewServeMux()
	handler := sqsworker.Chain(mux, sqsworker.DelayMiddleware(jobs), producer.UniqueMiddleware(store, nil)) // inside DelayMiddleware
	_, _ = poller.New(sqs.NewFromConfig(awsConfig), poller.Config{QueueURL: os.Getenv("QUEUE_URL")}, handler)
}

// The batcher merges concurrent sends (from HTTP handlers, say) into SendMessageBatch calls.
func ExampleBatcher() {
	var jobs *producer.Producer // producer.New(client, producer.Config{})
	batcher, err := jobs.NewBatcher(os.Getenv("QUEUE_URL"), producer.BatcherConfig{Window: 10 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer batcher.Close(context.Background()) // sends the open batch, waits for the calls in flight
	id, err := batcher.Send(context.Background(), producer.Job{Type: "ping", Body: `{}`})
	fmt.Println(id, err)
}

// Prepare checks and encodes a job without any service call; its JSON form can be
// stored (package outbox does) and sent later with SendPrepared.
func ExamplePrepare() {
	prepared, err := producer.Prepare("https://sqs.eu-west-1.amazonaws.com/123456789012/jobs", producer.Job{
		Type: "report", Payload: map[string]string{"month": "2026-11"}, Delay: 40 * time.Minute,
	})
	if err != nil {
		log.Fatal(err)
	}
	encoded, err := json.Marshal(prepared)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(encoded))
	// Later, perhaps in another process:
	//	var stored producer.Prepared
	//	err = json.Unmarshal(encoded, &stored)
	//	id, err := jobs.SendPrepared(ctx, stored)

	// Output:
	// {"v":1,"queue":"https://sqs.eu-west-1.amazonaws.com/123456789012/jobs","body":"{\"month\":\"2026-11\"}","attributes":{"job-type":{"t":"String","s":"report"}},"delay":"40m0s"}
}

// A tenant key for every job to a standard queue, sent as its MessageGroupId: SQS fair
// queues then hand quiet tenants' messages out first when one tenant floods the queue.
func ExampleConfig_tenant() {
	ctx := context.Background()
	awsConfig, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := sqs.NewFromConfig(awsConfig)
	queueURL := os.Getenv("QUEUE_URL")

	type Invoice struct {
		Customer string `json:"customer"`
	}
	jobs, err := producer.New(client, producer.Config{
		Tenant: func(job producer.Job) string {
			if invoice, ok := job.Payload.(Invoice); ok {
				return invoice.Customer // at most 128 ASCII letters, digits and punctuation
			}
			return "" // no tenant: SQS counts the message as a tenant of its own
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := jobs.Send(ctx, queueURL, producer.Job{Type: "invoice", Payload: Invoice{Customer: "acme"}}); err != nil {
		log.Fatal(err)
	}
}
