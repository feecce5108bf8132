package encrypt_test

import (
	"context"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/encrypt"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// A producer that encrypts every job's payload under a KMS key, and a worker that
// decrypts payloads under that key only (the README's encrypted payloads).
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	kmsClient, sqsClient := kms.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	const keyARN = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	queueURL := "https://sqs.us-east-1.amazonaws.com/111122223333/payments"

	// Producer side: one data key per job type for 5 minutes (or 10,000 jobs).
	encrypter, err := encrypt.NewEncrypter(kmsClient, encrypt.EncrypterConfig{KeyID: keyARN})
	if err != nil {
		log.Fatal(err)
	}
	jobs, err := producer.New(sqsClient, producer.Config{Encrypter: encrypter})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := jobs.Send(ctx, queueURL, producer.Job{Type: "charge", Payload: map[string]string{"card": "4111-1111-1111-1111"}}); err != nil {
		log.Fatal(err)
	}

	// Worker side: only the allowed keys; anything else goes to the dead-letter queue.
	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "charge", func(ctx context.Context, job struct{ Card string }) error {
		return nil // job.Card is the plaintext
	})
	decrypter, err := encrypt.NewDecrypter(kmsClient, encrypt.DecrypterConfig{AllowedKeys: []string{keyARN}})
	if err != nil {
		log.Fatal(err)
	}
	server, err := poller.New(sqsClient, poller.Config{QueueURL: queueURL}, sqsworker.Chain(mux, decrypter.Middleware()))
	if err != nil {
		log.Fatal(err)
	}
	_ = server.Start(ctx)
}
