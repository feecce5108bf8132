package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/testing/rie"
)

func TestMain(m *testing.M) {
	if store := os.Getenv(envRelay); store != "" { // a relay process the demo started
		os.Exit(relayMain(store))
	}
	os.Exit(rie.Main(m))
}

// TestDemoLambdaOnEmulator runs the demo's scenario with the worker hosted as a Lambda
// function: examples/webhook built as a bootstrap (-tags lambda.norpc) in two Runtime
// Interface Emulators, fed by the local event source mapping (batch size 10,
// ReportBatchItemFailures, maximum concurrency 2), with a 4 s function timeout (the
// idempotency lease ends with the invocation) below the queue's 10 s visibility
// timeout. One execution environment is killed mid-invocation, at a moment the paused
// receiver has made safe; its batch comes back after the visibility timeout and a new
// environment takes its place. The invariants are those of `make demo`: nothing lost,
// nothing delivered twice, and exactly the malformed and 410 deliveries dead-lettered,
// each with its reason.
//
// Unlike the long-poll worker, which deletes each message as soon as it is settled, the
// mapping deletes a batch's records only when the invocation returns, so a record the
// killed function had already sent to the dead-letter queue comes back and is sent
// again. The dead-letter queue may hold such copies, and only for records of the killed
// invocation.
func TestDemoLambdaOnEmulator(t *testing.T) {
	o := emulatorOptions(t)
	o.Host = hostLambda
	o.Functions, o.BatchSize, o.FunctionTimeout = 2, 10, 4*time.Second

	var out strings.Builder
	started := time.Now()
	result, err := run(context.Background(), o, &out)
	t.Log("\n" + out.String() + result.summary.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("run took %s", time.Since(started).Round(100*time.Millisecond))
	checkSummary(t, o, result)

	// Per unique delivery: the malformed ones dead-lettered as MalformedBody, the 410
	// ones as HTTP410, nothing else; a second copy only from the killed invocation or from
	// the killed relay's entry sent again.
	wantReasons := map[string]int{"MalformedBody": o.Malformed, "HTTP410": o.Gone}
	gotReasons := map[string]int{}
	for key, reasons := range result.DeadLetters {
		for _, reason := range reasons[1:] {
			if reason != reasons[0] {
				t.Errorf("%s dead-lettered as %v", key, reasons)
			}
		}
		gotReasons[reasons[0]]++
		if len(reasons) > 1 && !slices.Contains(result.Crashed, key) && !slices.Contains(result.Resent, key) {
			t.Errorf("%s dead-lettered %d times, but it was neither in the killed invocation %v nor an outbox entry the next relay sent again %v", key, len(reasons), result.Crashed, result.Resent)
		}
	}
	if len(gotReasons) != len(wantReasons) || gotReasons["MalformedBody"] != o.Malformed || gotReasons["HTTP410"] != o.Gone {
		t.Errorf("unique dead-lettered deliveries by reason = %v, want %v", gotReasons, wantReasons)
	}
	for _, want := range []string{"killed execution environment 1 (RIE and function; environment 3 takes its place) with an invocation of", "stopped the event source mapping"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the run did not report %q", want)
		}
	}
}
