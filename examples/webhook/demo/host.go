package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Host names, for options.Host and the -host flag.
const (
	hostPoller = "poller" // two long-poll worker processes, as on ECS (`make demo`)
	hostLambda = "lambda" // a Lambda function in the Runtime Interface Emulator
)

// host runs the webhook worker against the demo queue. run drives it: build before
// anything touches SQS, start, crash one of its units mid-run (at a moment the receiver
// has made safe), wait, then stop what is left.
type host interface {
	// unit names one of its units, for progress lines: "worker", "execution environment".
	unit() string
	// build builds what the host runs (into logDir where it keeps it).
	build(ctx context.Context, root, logDir string) error
	// start starts consuming the queue and returns once the host is ready.
	start(ctx context.Context, s setup) error
	// check returns an error when a part of the host the run still relies on has stopped.
	check() error
	// crash kills one unit abruptly, as a crash would. Its in-flight messages come back
	// after their visibility timeout.
	crash(ctx context.Context) (crash, error)
	// stop stops the rest gracefully, printing what it did, and returns an error when it
	// did not go as it should.
	stop() error
	// logPaths lists the JSON logs of every unit, the crashed one included; complete
	// after stop.
	logPaths() []string
	// close kills whatever still runs; run defers it.
	close()
}

// crash is what host.crash did.
type crash struct {
	// description starts the progress line: "SIGKILLed worker 1 (pid 42)".
	description string
	// messageIDs are the messages the crashed unit was known to hold in flight; nil when
	// the host cannot tell.
	messageIDs []string
}

// setup is what a host needs to start.
type setup struct {
	options  options
	queueURL string
	table    string
	logDir   string
	sqs      *sqs.Client
	printf   func(format string, args ...any)
}

// newHost returns the host options.Host names.
func newHost(o options) (host, error) {
	switch o.Host {
	case "", hostPoller:
		if o.Workers < 2 {
			return nil, fmt.Errorf("demo: %d workers; one is killed, so at least 2 are needed", o.Workers)
		}
		return &pollerHost{}, nil
	case hostLambda:
		if o.Functions < 1 {
			return nil, fmt.Errorf("demo: %d execution environments; at least 1 is needed", o.Functions)
		}
		return &lambdaHost{}, nil
	default:
		return nil, fmt.Errorf("demo: unknown host %q; want %s or %s", o.Host, hostPoller, hostLambda)
	}
}

// workerSettings are the SQSWORKER_* settings every host gives the worker.
func workerSettings(o options, table string) []string {
	settings := []string{
		"SQSWORKER_IDEMPOTENCY_TABLE=" + table,
		"SQSWORKER_LOG_FORMAT=json",
		// The demo's receiver listens on 127.0.0.1, which the worker refuses by default.
		"SQSWORKER_DELIVERY_ALLOW_NETWORKS=127.0.0.1/32",
	}
	if o.DeliveryTimeout > 0 {
		settings = append(settings, "SQSWORKER_DELIVERY_TIMEOUT="+o.DeliveryTimeout.String())
	}
	return settings
}

// inheritedSettings returns the names of the SQSWORKER_* variables set in this
// process's environment. Hosts must not pass them on: a variable set in the shell
// (SQSWORKER_QUEUE_NAME, SQSWORKER_LOG_LEVEL, say) could redirect or break the workers.
// The Lambda host needs the names: the RIE passes its whole environment on, so it blanks
// them (the worker reads an empty variable as unset).
func inheritedSettings() []string {
	var names []string
	for _, variable := range os.Environ() {
		if name, _, _ := strings.Cut(variable, "="); strings.HasPrefix(name, "SQSWORKER_") {
			names = append(names, name)
		}
	}
	return names
}
