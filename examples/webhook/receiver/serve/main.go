// Command serve runs the demo's webhook receiver (package receiver) on its own, to watch
// deliveries arrive from a local worker or Lambda function: one log line per request.
//
//	go run ./examples/webhook/receiver/serve                 # 127.0.0.1:8080, every request 200
//	go run ./examples/webhook/receiver/serve -failure-rate 0.5 -address 127.0.0.1:9090
//
// Paths under /gone/ answer 410 Gone (dead-lettered by the worker); a request without an
// Idempotency-Key header gets 400. Ctrl-C stops it and prints the totals.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sqsworker/sqsworker/examples/webhook/receiver"
)

func main() {
	address := flag.String("address", "127.0.0.1:8080", "listen address")
	failureRate := flag.Float64("failure-rate", 0, "share of requests (0 to 1) answered 503")
	flag.Parse()
	r, err := receiver.Start(receiver.Config{
		Address:     *address,
		FailureRate: *failureRate,
		Seed:        1,
		Logger:      slog.New(slog.NewTextHandler(os.Stdout, nil)),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("receiver: listening on %s (POST %s/hook; %s... answers 410)\n", r.URL(), r.URL(), receiver.GonePrefix)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	_ = r.Close()
	totals, delivered := r.Totals()
	fmt.Printf("receiver: %d requests, %d deliveries answered 2xx, %d 503, %d 410, %d abandoned\n",
		totals.Requests, delivered, totals.Failures, totals.Gone, totals.Abandoned)
}
