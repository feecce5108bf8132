package poller

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// The C15 test runs a worker in a child process (this test binary, re-executed with
// helperEnvironment set) so that it receives a real SIGTERM.
const (
	helperEnvironment = "SQSWORKER_POLLER_TEST_HELPER"
	helperQueueURL    = "SQSWORKER_POLLER_TEST_QUEUE_URL"
	helperDrain       = 4 * time.Second
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnvironment) {
	case "shutdown":
		os.Exit(runShutdownHelper())
	case "notifycontext":
		os.Exit(runNotifyContextHelper())
	case "stoptimeout":
		os.Exit(runStopTimeoutHelper())
	}
	// The emulator tests spend their time waiting on SQS, not on the CPU: unless -parallel
	// was given, run them all at once instead of GOMAXPROCS at a time.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "32")
	}
	os.Exit(m.Run())
}

// helperEvents writes one event per line on stdout for the parent test.
type helperEvents struct{ mu sync.Mutex }

func (e *helperEvents) emit(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

// eventClient reports the start and end of each ReceiveMessage call.
type eventClient struct {
	*sqs.Client
	events *helperEvents
}

func (c *eventClient) ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.events.emit("receive-start")
	output, err := c.Client.ReceiveMessage(ctx, input, optFns...)
	count := 0
	if output != nil {
		count = len(output.Messages)
	}
	c.events.emit("receive-end %d %v", count, err)
	return output, err
}

// runShutdownHelper is the child process: a worker whose handler needs 3 s for "f1"
// and waits for cancellation on "s1". It returns the exit code.
func runShutdownHelper() int {
	events := &helperEvents{}
	awsConfig, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		events.emit("error %v", err)
		return 2
	}
	handler := sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		events.emit("start %s", message.Body)
		switch message.Body {
		case "f1":
			select {
			case <-time.After(3 * time.Second):
				events.emit("done %s", message.Body)
				return nil
			case <-ctx.Done():
				events.emit("cancelled %s %v", message.Body, context.Cause(ctx))
				return ctx.Err()
			}
		case "s1":
			<-ctx.Done()
			events.emit("cancelled %s %v", message.Body, context.Cause(ctx))
			return ctx.Err()
		}
		events.emit("done %s", message.Body)
		return nil
	})
	server, err := New(&eventClient{Client: sqs.NewFromConfig(awsConfig), events: events}, Config{
		QueueURL:     os.Getenv(helperQueueURL),
		DrainTimeout: helperDrain,
		Logger:       slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
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

// childOutput collects the child's event lines.
type childOutput struct {
	mu    sync.Mutex
	lines []string
}

func (o *childOutput) read(scanner *bufio.Scanner) {
	for scanner.Scan() {
		o.mu.Lock()
		o.lines = append(o.lines, scanner.Text())
		o.mu.Unlock()
	}
}

func (o *childOutput) count(prefix string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	count := 0
	for _, line := range o.lines {
		if strings.HasPrefix(line, prefix) {
			count++
		}
	}
	return count
}

func (o *childOutput) find(prefix string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, line := range o.lines {
		if strings.HasPrefix(line, prefix) {
			return line, true
		}
	}
	return "", false
}

// TestEmulatorSIGTERMDrain is C15, times shortened (drain deadline 4 s): at SIGTERM f1
// needs about 2 s more, s1 would run forever, and a long poll is in flight. f1
// completes and is deleted; no ReceiveMessage starts after SIGTERM; n1, returned by the
// in-flight poll after SIGTERM, is never handled but released at once; s1 is cancelled
// at the drain deadline and released (visibility 0, the queue's is 300 s), so a second
// worker gets s1 and n1 within 5 s; the process exits with code 0.
func TestEmulatorSIGTERMDrain(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 300 * time.Second, MaxReceiveCount: 5})
	sendMessage(t, client, queue.URL, "f1", "")
	sendMessage(t, client, queue.URL, "s1", "")

	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), helperEnvironment+"=shutdown", helperQueueURL+"="+queue.URL)
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	output := &childOutput{}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		output.read(bufio.NewScanner(stdout))
	}()
	exited := make(chan error, 1)
	go func() {
		<-readDone // Wait closes stdout: read it all first
		exited <- child.Wait()
	}()
	t.Cleanup(func() {
		_ = child.Process.Kill()
		if t.Failed() {
			output.mu.Lock()
			t.Logf("child events:\n%s\nchild logs:\n%s", strings.Join(output.lines, "\n"), stderr.String())
			output.mu.Unlock()
		}
	})

	testenv.Eventually(t, 20*time.Second, "f1 and s1 running and a long poll in flight", func() bool {
		return output.count("start f1") == 1 && output.count("start s1") == 1 &&
			output.count("receive-start") > output.count("receive-end")
	})
	receivesBefore := output.count("receive-start")
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	time.Sleep(time.Second) // the scenario: n1 arrives one second after SIGTERM
	sendMessage(t, client, queue.URL, "n1", "")

	var exitErr error
	select {
	case exitErr = <-exited:
	case <-time.After(helperDrain + 10*time.Second):
		t.Fatal("the worker did not exit")
	}
	exitedAfter := time.Since(signalled)
	if exitErr != nil {
		t.Errorf("worker exit: %v, want code 0", exitErr)
	}
	if exitedAfter > helperDrain+cancelGrace+2*time.Second {
		t.Errorf("worker exited %s after SIGTERM, want within the %s drain + %s grace + 2s", exitedAfter, helperDrain, cancelGrace)
	}
	if output.count("done f1") != 1 {
		t.Error("f1 did not complete during the drain")
	}
	if line, ok := output.find("cancelled s1"); !ok || !strings.Contains(line, ErrDrainTimeout.Error()) {
		t.Errorf("s1 cancellation = %q, want cause ErrDrainTimeout", line)
	}
	if output.count("start n1") != 0 {
		t.Error("n1, received after SIGTERM, was handed to the handler")
	}
	if got := output.count("receive-start"); got != receivesBefore {
		t.Errorf("%d ReceiveMessage calls started after SIGTERM, want 0", got-receivesBefore)
	}

	// A second worker gets s1 and n1 within 5 s, not after the 300 s visibility timeout.
	exitedAt := time.Now()
	counts := map[string]int32{}
	for len(counts) < 2 && time.Since(exitedAt) < 5*time.Second {
		received, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(queue.URL),
			MaxNumberOfMessages:         10,
			WaitTimeSeconds:             1,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, message := range received.Messages {
			var count int32
			fmt.Sscan(message.Attributes["ApproximateReceiveCount"], &count)
			counts[aws.ToString(message.Body)] = count
		}
	}
	if counts["s1"] != 2 || counts["n1"] != 2 || len(counts) != 2 {
		t.Errorf("second worker received %v within 5s, want s1 and n1, each on its 2nd receive", counts)
	}
	if visible, inFlight := testenv.Counts(t, client, queue.URL); visible != 0 || inFlight != 2 {
		t.Errorf("queue holds %d visible and %d in flight, want f1 deleted (0 and 2)", visible, inFlight)
	}
}
