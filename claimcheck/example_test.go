package claimcheck_test

import (
	"context"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// A producer that sends jobs above the queue's MaximumMessageSize through S3, and a
// consumer handler that gets them back whole.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	s3Client, sqsClient := s3.NewFromConfig(cfg), sqs.NewFromConfig(cfg)

	// Producer side: the store is the producer's PayloadStore.
	store, err := claimcheck.NewStore(s3Client, claimcheck.Config{Bucket: "my-payloads", KeyPrefix: "jobs/"})
	if err != nil {
		log.Fatal(err)
	}
	jobs, err := producer.New(sqsClient, producer.Config{PayloadStore: store})
	if err != nil {
		log.Fatal(err)
	}
	_ = jobs // jobs.Send(ctx, queueURL, producer.Job{Type: "render", Payload: bigDocument})

	// Consumer side: resolve pointers before the handler, only from the producer's
	// bucket and prefix. The cleaner deletes a payload once the host reports its message
	// deleted after success: it is the host's observer, and it stops after the host.
	cleaner := claimcheck.NewCleaner(s3Client, claimcheck.CleanerConfig{})
	defer cleaner.Shutdown(ctx)
	resolver, err := claimcheck.NewResolver(s3Client, claimcheck.ResolverConfig{
		Allow:   []claimcheck.Location{{Bucket: "my-payloads", KeyPrefix: "jobs/"}}, // or store.Location()
		Cleaner: cleaner,
	})
	if err != nil {
		log.Fatal(err)
	}
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		return nil // m.Body is the payload, whichever library sent it
	})
	server, err := poller.New(sqsClient, poller.Config{QueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/renders", Observer: cleaner},
		sqsworker.Chain(handler, resolver.Middleware()))
	if err != nil {
		log.Fatal(err)
	}
	_ = server // server.Run(ctx)
}
