package worker_test

import (
	"context"
	"log"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/worker"
)

// deliver is the handler of the package comment's example.
func deliver(ctx context.Context, m *sqsworker.Message) error { return ctx.Err() }

// main is the package comment's example (in a package main of its own).
func main() {
	handler := sqsworker.HandlerFunc(deliver)
	if err := worker.Run(context.Background(), handler, worker.Options{}); err != nil {
		log.Fatal(err) // configuration problems, each naming its variable
	}
}

// One binary for both hosts: main above.
func Example() {
	_ = main
}
