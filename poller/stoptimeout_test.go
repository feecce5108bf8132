package poller

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// Settings of the stop-timeout child (runStopTimeoutHelper).
const (
	helperStopTimeout = "SQSWORKER_POLLER_TEST_STOP_TIMEOUT"
	helperWaitTime    = "SQSWORKER_POLLER_TEST_WAIT_TIME"
)

// runStopTimeoutHelper is the child of the stop-timeout tests: Concurrency 3 and
// Prefetch 7, StopTimeout from helperStopTimeout. The first handler to start needs
// stopRoleTimes[0], the second stopRoleTimes[1]; the third runs until its context ends.
// It reports receives, handler starts and ends on stdout, and returns the exit code.
func runStopTimeoutHelper() int {
	events := &helperEvents{}
	awsConfig, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		events.emit("error %v", err)
		return 2
	}
	stop, err := time.ParseDuration(os.Getenv(helperStopTimeout))
	if err != nil {
		events.emit("error %v", err)
		return 2
	}
	wait, err := time.ParseDuration(os.Getenv(helperWaitTime))
	if err != nil {
		events.emit("error %v", err)
		return 2
	}
	var mu sync.Mutex
	started := 0
	handler := sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		mu.Lock()
		role := started
		started++
		mu.Unlock()
		events.emit("start %s %d", message.Body, role)
		var work <-chan time.Time // the third runs until its context ends
		if role < len(stopRoleTimes) {
			work = time.After(stopRoleTimes[role])
		}
		select {
		case <-work:
			events.emit("done %s", message.Body)
			return nil
		case <-ctx.Done():
			events.emit("cancelled %s %v", message.Body, context.Cause(ctx))
			return ctx.Err()
		}
	})
	server, err := New(&eventClient{Client: sqs.NewFromConfig(awsConfig), events: events}, Config{
		QueueURL:    os.Getenv(helperQueueURL),
		Concurrency: 3,
		Prefetch:    7,
		WaitTime:    wait,
		StopTimeout: stop,
		Observer: sqsworker.ObserverFunc(func(_ context.Context, ev sqsworker.Event) {
			if ev.Kind == sqsworker.EventReceived {
				events.emit("received %s", ev.Message.Body)
			}
		}),
		Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	}, handler)
	if err != nil {
		events.emit("error %v", err)
		return 2
	}
	if err := server.Run(context.Background()); err != nil {
		events.emit("error %v", err)
		return 1
	}
	return 0
}

// stopRoleTimes are how long the first two handlers of the stop-timeout child need.
var stopRoleTimes = []time.Duration{2 * time.Second, 4 * time.Second}

// waitOrKill waits for the child until the platform would kill it (stop after
// signalled) and SIGKILLs it then, as ECS does; it returns the exit error and when the
// child exited.
func waitOrKill(t *testing.T, child *helperChild, signalled time.Time, stop time.Duration) (error, time.Duration) {
	t.Helper()
	select {
	case err := <-child.exited:
		return err, time.Since(signalled)
	case <-time.After(time.Until(signalled.Add(stop))):
		_ = child.command.Process.Kill()
		err := <-child.exited
		return fmt.Errorf("SIGKILLed at the stop timeout (exit code 137 on ECS): %v", err), time.Since(signalled)
	}
}

// TestEmulatorStopTimeoutBoundsTheShutdown is CASES.md N26's container lane, times
// scaled down (stop timeout 10 s, so the drain deadline is 5 s): at SIGTERM three
// handlers run (2 s, 4 s and unbounded) and seven messages are held unstarted
// (Prefetch). No ReceiveMessage starts after SIGTERM; the seven are released at once
// (another consumer gets them within 2 s); the first two finish and are deleted; the
// third is cancelled at the drain deadline (cause ErrDrainTimeout) and released; the
// process exits 0 before the stop timeout.
func TestEmulatorStopTimeoutBoundsTheShutdown(t *testing.T) {
	t.Parallel()
	const stop, drain = 10 * time.Second, 5 * time.Second
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 120 * time.Second, MaxReceiveCount: 5})
	var bodies []string
	for i := range 10 {
		bodies = append(bodies, fmt.Sprintf("m%d", i))
		sendMessage(t, client, queue.URL, bodies[i], "")
	}
	child := startHelperChild(t, "stoptimeout", helperQueueURL+"="+queue.URL, helperStopTimeout+"="+stop.String(), helperWaitTime+"=1s")
	testenv.Eventually(t, 30*time.Second, "3 handlers running and 10 messages received", func() bool {
		return child.output.count("start ") == 3 && child.output.count("received ") == 10
	})
	receivesBefore := child.output.count("receive-start")
	child.signal(t, syscall.SIGTERM)
	signalled := time.Now()

	var running []string // the three started, in start order
	for role := range 3 {
		for _, body := range bodies {
			if _, ok := child.output.find(fmt.Sprintf("start %s %d", body, role)); ok {
				running = append(running, body)
			}
		}
	}
	if len(running) != 3 {
		t.Fatalf("started %v, want three", running)
	}
	var unstarted []string
	for _, body := range bodies {
		if !slices.Contains(running, body) {
			unstarted = append(unstarted, body)
		}
	}
	got := receiveBodies(t, client, queue.URL, len(unstarted), 2*time.Second)
	if !slices.Equal(got, unstarted) {
		t.Errorf("within 2 s of SIGTERM another consumer got %v, want the 7 unstarted %v", got, unstarted)
	}

	err, exitedAfter := waitOrKill(t, child, signalled, stop)
	if err != nil {
		t.Errorf("worker exit after %s: %v, want code 0", exitedAfter, err)
	}
	for _, body := range running[:2] {
		if child.output.count("done "+body) != 1 {
			t.Errorf("%s did not finish during the drain", body)
		}
	}
	if line, ok := child.output.find("cancelled " + running[2]); !ok || !strings.Contains(line, ErrDrainTimeout.Error()) {
		t.Errorf("%s: %q, want it cancelled at the drain deadline (ErrDrainTimeout)", running[2], line)
	}
	if exitedAfter < drain || exitedAfter >= stop {
		t.Errorf("exited %s after SIGTERM, want after the %s drain deadline and before the %s stop timeout", exitedAfter, drain, stop)
	}
	if receives := child.output.count("receive-start"); receives != receivesBefore {
		t.Errorf("%d ReceiveMessage calls started after SIGTERM, want 0", receives-receivesBefore)
	}
	if got := receiveBodies(t, client, queue.URL, 1, 5*time.Second); !slices.Equal(got, running[2:]) {
		t.Errorf("after the exit another consumer got %v, want the cancelled %s, released", got, running[2])
	}
	if visible, inFlight := testenv.Counts(t, client, queue.URL); visible != 0 || inFlight != 8 {
		t.Errorf("queue holds %d visible and %d in flight, want the two finished messages deleted (0 and 8)", visible, inFlight)
	}
}

// TestEmulatorStopTimeoutEndsTheIdleLongPoll: an idle worker (20 s long polls) with a
// stop timeout of 8 s gets SIGTERM while a long poll is in flight. Without the stop
// timeout the shutdown would wait for the poll (up to 20 s) and be killed; with it, Run
// cancels the poll 4 s before the stop timeout and the process exits 0 in time.
func TestEmulatorStopTimeoutEndsTheIdleLongPoll(t *testing.T) {
	t.Parallel()
	const stop = 8 * time.Second
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	child := startHelperChild(t, "stoptimeout", helperQueueURL+"="+queue.URL, helperStopTimeout+"="+stop.String(), helperWaitTime+"=20s")
	testenv.Eventually(t, 30*time.Second, "a long poll in flight", func() bool {
		return child.output.count("receive-start") > child.output.count("receive-end")
	})
	child.signal(t, syscall.SIGTERM)
	signalled := time.Now()
	err, exitedAfter := waitOrKill(t, child, signalled, stop)
	if err != nil {
		t.Errorf("worker exit after %s: %v, want code 0 before the %s stop timeout", exitedAfter, err, stop)
	}
	if exitedAfter < stop-stopExitMargin {
		t.Errorf("exited %s after SIGTERM, before the poll was due to be cancelled (%s)", exitedAfter, stop-stopExitMargin)
	}
}

// receiveBodies receives up to want messages from the queue within timeout (each hidden
// for a minute) and returns their bodies, sorted.
func receiveBodies(t *testing.T, client *sqs.Client, queueURL string, want int, timeout time.Duration) []string {
	t.Helper()
	var bodies []string
	for deadline := time.Now().Add(timeout); len(bodies) < want && time.Now().Before(deadline); {
		output, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, message := range output.Messages {
			bodies = append(bodies, aws.ToString(message.Body))
		}
	}
	slices.Sort(bodies)
	return bodies
}
