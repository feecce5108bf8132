package poller

// Emulator tests with the fault proxy (internal/testing/faultproxy) between the poller's SQS
// client and LocalStack.

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// proxiedSQS returns an SQS client whose calls go through a new fault proxy to the
// emulator.
func proxiedSQS(t *testing.T) (*sqs.Client, *faultproxy.Proxy) {
	t.Helper()
	testenv.SQS(t) // fails the test when the emulator is not configured
	proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_SQS"))
	client := sqs.NewFromConfig(testenv.AWSConfig(t), func(o *sqs.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	return client, proxy
}

// TestEmulatorLostReceiveResponseHidesMessageOnlyForReceiveVisibility (issue 9): the
// response of the ReceiveMessage that took m1 is lost (connection reset after SQS
// handed it out). On a queue with a 200 s visibility timeout, m1 is back after
// Config.ReceiveVisibility (3 s here), not after 200 s, and is handled once, at its
// second receive.
func TestEmulatorLostReceiveResponseHidesMessageOnlyForReceiveVisibility(t *testing.T) {
	t.Parallel()
	direct := testenv.SQS(t)
	client, proxy := proxiedSQS(t)
	queue := testenv.NewQueue(t, direct, testenv.QueueOptions{VisibilityTimeout: 200 * time.Second, MaxReceiveCount: 5})
	sendMessage(t, direct, queue.URL, "m1", "")
	proxy.SetRules(faultproxy.Rule{Operations: []string{"ReceiveMessage"}, Fraction: 1, Times: 1, Reset: true, ResponseContains: `"Messages"`})
	const receiveVisibility = 3 * time.Second
	calls := &callLog{}
	server := startServer(t, client, Config{QueueURL: queue.URL, WaitTime: time.Second, ReceiveVisibility: receiveVisibility, Logger: discardLogger()},
		sqsworker.HandlerFunc(func(_ context.Context, message *sqsworker.Message) error {
			calls.add(message)
			return nil
		}))
	// Without the short receive visibility m1 would stay hidden for 200 s.
	testenv.Eventually(t, receiveVisibility+10*time.Second, "m1 handled after its lost receive", func() bool { return server.Stats().Deleted == 1 })
	got := calls.all()
	if len(got) != 1 || got[0].body != "m1" || got[0].receiveCount != 2 {
		t.Errorf("handler calls = %+v; want m1 once, at receive count 2", got)
	}
	var resets int
	for _, call := range proxy.Calls() {
		if call.Fault == "reset" {
			resets++
		}
	}
	if resets != 1 {
		t.Errorf("%d resets, want 1", resets)
	}
}

// TestEmulatorNoLongPollAfterShutdownBegins (issue 9): the long poll in flight when the
// shutdown begins loses its response (connection reset). The SDK would retry it, a
// fresh long poll after the shutdown began; the poller's per-call retryer stops that,
// so the proxy sees exactly one ReceiveMessage attempt.
func TestEmulatorNoLongPollAfterShutdownBegins(t *testing.T) {
	t.Parallel()
	direct := testenv.SQS(t)
	client, proxy := proxiedSQS(t)
	queue := testenv.NewQueue(t, direct, testenv.QueueOptions{MaxReceiveCount: 5})
	hold := make(chan struct{})
	proxy.SetRules(faultproxy.Rule{Operations: []string{"ReceiveMessage"}, Fraction: 1, Times: 1, Reset: true, Hold: hold})
	var handled atomic.Int32
	server, err := New(client, Config{QueueURL: queue.URL, WaitTime: 2 * time.Second, Logger: discardLogger()}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		handled.Add(1)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first long poll in flight", func() bool { return server.Stats().ReceiveCalls == 1 })
	shutdown := make(chan error, 1)
	go func() { shutdown <- server.Shutdown(context.Background()) }()
	eventually(t, "the shutdown begun", func() bool { return !server.running() })
	close(hold) // now the poll's response is lost
	if err := <-shutdown; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	var receives []faultproxy.Call
	for _, call := range proxy.Calls() {
		if call.Operation == "ReceiveMessage" {
			receives = append(receives, call)
		}
	}
	if len(receives) != 1 || receives[0].Fault != "reset" {
		t.Errorf("ReceiveMessage calls at the proxy = %+v; want only the reset one (no SDK retry after the shutdown began)", receives)
	}
}
