// Command demo runs the webhook-delivery pipeline end to end on the local emulator and
// prints one summary line; `make demo` runs it with the emulator's environment set:
//
//	demo: orders=500 rolled_back=25 outbox_published=500 sent=500 unique=460 delivered=430 duplicates_suppressed=40 dead_lettered=30 lost=0 double_delivered=0 phantom=0
//
// An orders service writes each order and its webhook job in one transaction (package
// outbox): by default in DynamoDB on the emulator (an orders table and an outbox table,
// one TransactWriteItems each), with -store=postgres (`make demo DEMO_STORE=postgres`) in
// PostgreSQL at SQSWORKER_POSTGRES_URL (localstack/postgres-up). 25 more orders are
// written in transactions rolled back on purpose. Relay processes (this executable with
// SQSWORKER_DEMO_RELAY set) publish the outbox; relay 1 is SIGKILLed after 30% of the
// orders are published (on PostgreSQL a second relay runs beside it from the start, on
// DynamoDB one replaces it). orders counts the committed orders, rolled_back the others,
// outbox_published the entries the relays published, phantom the rolled-back orders the
// receiver or the dead-letter queue ever saw (it must be 0).
//
// It provisions the queue, dead-letter queue and idempotency table of
// localstack/resources.json (purged and emptied first), starts a local receiver that
// fails 15% of requests with 503 and answers 410 under /gone/, sends 500 deliveries
// (40 duplicate sends, 20 to /gone/ endpoints, 10 malformed) as orders through the
// outbox, builds the worker and runs two of them, SIGKILLs one after a third of the deliveries (at a moment the
// receiver has made safe: paused, no response for 1 s), waits for the survivor to
// finish everything, reads the dead-letter queue, stops the survivor with SIGTERM and
// checks it drains and exits 0.
//
// Counters: sent is the messages sent; unique the distinct deliveries (each malformed
// body counts as one); delivered the deliveries the receiver answered 2xx at least once
// on a live connection; duplicates_suppressed the messages the workers deleted without
// delivering because their delivery was already completed (from the workers' logs);
// dead_lettered the unique deliveries found in the dead-letter queue; lost the unique
// deliveries neither delivered nor dead-lettered; double_delivered the deliveries the
// receiver answered 2xx more than once. It exits 1 when lost, double_delivered or phantom
// is not 0, when an outbox entry failed or the outbox did not drain, when the survivor
// (worker or relay) does not exit 0, or when the run fails.
//
// Run it directly with: eval "$(localstack/env)" && go run ./examples/webhook/demo
//
// With -host=lambda the same scenario runs with the worker hosted as a Lambda function:
// built as a provided.al2023 bootstrap and run in two Runtime Interface Emulators (two
// execution environments; a 10 s function timeout, with which the idempotency lease
// ends), fed by a local SQS event source mapping (batch size 10,
// ReportBatchItemFailures). The crash kills one environment mid-invocation; its batch
// comes back after the visibility timeout and a new environment takes its place, as
// Lambda does. The counters and the exit status are the same.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if store := os.Getenv(envRelay); store != "" { // a relay process the demo started
		os.Exit(relayMain(store))
	}
	o := defaultOptions()
	flag.StringVar(&o.Host, "host", o.Host, "where the worker runs: "+hostPoller+" (two worker processes) or "+hostLambda+" (a Lambda function in the Runtime Interface Emulator)")
	flag.StringVar(&o.Store, "store", o.Store, "where the orders and their outbox live: "+storeDynamoDB+" (the emulator) or "+storePostgres+" (SQSWORKER_POSTGRES_URL)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	result, err := run(ctx, o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if result.summary != (summary{}) { // a run that failed before counting has no summary
		fmt.Println(result.summary)
	}
	if err != nil || result.Lost != 0 || result.DoubleDelivered != 0 || result.Phantom != 0 {
		stop()
		os.Exit(1)
	}
}
