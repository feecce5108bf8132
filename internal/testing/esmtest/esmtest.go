// Package esmtest runs the test function (examples/lambdatest) in the Runtime Interface
// Emulator behind a local event source mapping, for end-to-end tests on the emulated SQS.
//
//	h := esmtest.Start(t, client, esmtest.Options{
//		QueueURL: queue.URL,
//		Env:      []string{"LAMBDATEST_BACKOFF_BASE=1s"},
//		Mapping:  localesm.Config{BatchSize: 3, ReportBatchItemFailures: true},
//	})
//	testenv.Eventually(t, 20*time.Second, "m2 handled three times", func() bool { return len(h.Calls(t, "A-2")) == 3 })
package esmtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sqsworker/sqsworker/internal/testing/rie"
	"github.com/sqsworker/sqsworker/lambda/localesm"
)

// FunctionPackage is the test function's main package.
const FunctionPackage = "github.com/sqsworker/sqsworker/examples/lambdatest"

// Options describes one end-to-end setup.
type Options struct {
	// QueueURL is the source queue. Required.
	QueueURL string
	// Functions is how many execution environments (RIEs) to start; if zero, 1.
	Functions int
	// Env configures the test function (LAMBDATEST_* variables, see examples/lambdatest).
	Env []string
	// Timeout is the function timeout; if zero, 10 s.
	Timeout time.Duration
	// Mapping configures the event source mapping; QueueURL and FunctionURLs are filled in.
	Mapping localesm.Config
}

// Entry is one line of the test function's call log.
type Entry struct {
	Event        string `json:"event"`         // "call" or "effect"
	UnixMilli    int64  `json:"t"`             // when, in epoch milliseconds
	MessageID    string `json:"message_id"`    // the SQS message id
	Key          string `json:"key"`           // the job's key
	ReceiveCount int    `json:"receive_count"` // ApproximateReceiveCount of the delivery
}

// Time returns when the entry was written.
func (e Entry) Time() time.Time { return time.UnixMilli(e.UnixMilli) }

// Harness is a running setup. Everything stops when the test ends.
type Harness struct {
	// Mapping is the running event source mapping.
	Mapping *localesm.Mapping
	// Functions are the emulators, one per execution environment.
	Functions []*rie.Function

	logPath string
	batches func() []localesm.Batch
}

// Start builds the test function, starts its emulators and the mapping.
func Start(t testing.TB, client *sqs.Client, options Options) *Harness {
	t.Helper()
	bootstrap := rie.BuildBootstrap(t, FunctionPackage)
	h := &Harness{logPath: filepath.Join(t.TempDir(), "calls.jsonl")}
	count := max(options.Functions, 1)
	timeout := options.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	env := append(slices.Clip(options.Env), "LAMBDATEST_LOG="+h.logPath)
	cfg := options.Mapping
	cfg.QueueURL = options.QueueURL
	for range count {
		fn := rie.Start(t, rie.Options{Bootstrap: bootstrap, Env: env, Timeout: timeout})
		h.Functions = append(h.Functions, fn)
		cfg.FunctionURLs = append(cfg.FunctionURLs, fn.URL)
	}
	h.Mapping, h.batches = Run(t, client, cfg)
	return h
}

// HarnessWaitTime is the mapping's long-poll wait when cfg.WaitTime is zero. The emulator
// can, rarely and under load, keep a long poll empty for its whole wait while messages are
// visible (localstack/README.md): with the mapping's default of 20 s one such poll alone
// outlasts a test's wait for an invocation, so the harness polls for 1 s at a time.
const HarnessWaitTime = time.Second

// Run starts a mapping with cfg, records its batches (after cfg.OnBatch, if set), and
// stops it when the test ends. The returned function lists the batches so far. Unless
// set, cfg.WaitTime is HarnessWaitTime and cfg.Logger writes to the test's log (shown
// when the test fails).
func Run(t testing.TB, client localesm.SQSAPI, cfg localesm.Config) (*localesm.Mapping, func() []localesm.Batch) {
	t.Helper()
	if cfg.WaitTime == 0 {
		cfg.WaitTime = HarnessWaitTime
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	var mu sync.Mutex
	var batches []localesm.Batch
	onBatch := cfg.OnBatch
	cfg.OnBatch = func(batch localesm.Batch) {
		if onBatch != nil {
			onBatch(batch)
		}
		mu.Lock()
		defer mu.Unlock()
		batches = append(batches, batch)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mapping, err := localesm.New(ctx, client, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mapping.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return mapping, func() []localesm.Batch {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(batches)
	}
}

// Batches returns the invocations so far.
func (h *Harness) Batches() []localesm.Batch { return h.batches() }

// Entries returns the test function's call log so far.
func (h *Harness) Entries(t testing.TB) []Entry {
	t.Helper()
	file, err := os.Open(h.logPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var entries []Entry
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		var entry Entry
		if err := json.Unmarshal(scanner.Bytes(), &entry); err != nil {
			t.Fatalf("esmtest: call log line %q: %v", scanner.Text(), err)
		}
		entries = append(entries, entry)
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return entries
}

// Calls returns the handler calls for key, in order.
func (h *Harness) Calls(t testing.TB, key string) []Entry {
	t.Helper()
	return h.filter(t, "call", key)
}

// Effects returns how many times key's side effect was committed.
func (h *Harness) Effects(t testing.TB, key string) int {
	t.Helper()
	return len(h.filter(t, "effect", key))
}

func (h *Harness) filter(t testing.TB, event, key string) []Entry {
	t.Helper()
	var matched []Entry
	for _, entry := range h.Entries(t) {
		if entry.Event == event && entry.Key == key {
			matched = append(matched, entry)
		}
	}
	return matched
}

// Send sends each body to the queue and returns the message ids, in order.
func Send(t testing.TB, client *sqs.Client, queueURL string, bodies ...string) []string {
	t.Helper()
	ids := make([]string, len(bodies))
	for i, body := range bodies {
		output, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)})
		if err != nil {
			t.Fatalf("esmtest: sending %s: %v", body, err)
		}
		ids[i] = aws.ToString(output.MessageId)
	}
	return ids
}

// SortedIDs returns the message ids of the batch's records, sorted.
func SortedIDs(batch localesm.Batch) []string {
	ids := make([]string, 0, len(batch.Event.Records))
	for _, record := range batch.Event.Records {
		ids = append(ids, record.MessageId)
	}
	slices.Sort(ids)
	return ids
}

// Sorted returns a sorted copy of values.
func Sorted(values ...string) []string {
	values = slices.Clone(values)
	slices.Sort(values)
	return values
}
