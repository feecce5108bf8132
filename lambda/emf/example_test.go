package emf_test

import (
	"log"

	awslambda "github.com/aws/aws-lambda-go/lambda"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/lambda/emf"
)

// One EMF line per invocation, on stdout.
func Example() {
	var h sqsworker.Handler = sqsworker.HandlerFunc(nil)
	recorder := emf.New(emf.Config{Namespace: "orders-worker"})
	batch, err := lambda.NewBatchHandler(h, lambda.WithObserver(recorder))
	if err != nil {
		log.Fatal(err)
	}
	awslambda.Start(recorder.Wrap(batch.Handle))
}
