package emf_test

import (
	awslambda "github.com/aws/aws-lambda-go/lambda"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/lambda/emf"
)

// One EMF line per invocation, on stdout.
func Example() {
	var h sqsworker.Handler = sqsworker.HandlerFunc(nil)
	recorder := emf.New(emf.Config{Namespace: "orders-worker"})
	batch := lambda.New(h, lambda.WithObserver(recorder))
	awslambda.Start(recorder.Wrap(batch.Handle))
}
