package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// The latency runs (-arrival-rate, BENCH_ARRIVAL_RATE): what a job's user feels. Jobs
// are sent one at a time (SendMessage, through the SQS proxy and its latency) at a
// Poisson arrival rate to an empty queue that the contender consumes; each handler call
// notes when it started, by the job's key, in a file; enqueue-to-handler-start is that
// time minus the moment the bench called SendMessage (so it includes the send's own
// round trip). The jobs of the warm-up (-warmup at the rate) are left out of the
// figures. Contenders that report their handler starts: ceiling, poller,
// poller_idempotency, sqs_consumer (scripts/bench-node/consumer.mjs) and spring
// (bench/spring) note them in memory and write them at exit (SIGTERM) to
// BENCH_STARTS_FILE, set only for these runs, so the throughput runs note nothing;
// lambda_esm reports them through the lambdatest bootstrap's LAMBDATEST_LOG, to the
// millisecond.

// envStartsFile is where a contender in a latency run writes its handler starts (a Go
// worker in mode "arrival", consumer.mjs, the Spring application).
const envStartsFile = "BENCH_STARTS_FILE"

// startLine is one handler start: the lambdatest log's shape ("t" in Unix
// milliseconds), with the Go workers' nanoseconds beside it.
type startLine struct {
	Event    string `json:"event"`
	Key      string `json:"key"`
	UnixMill int64  `json:"t"`
	UnixNano int64  `json:"t_ns,omitempty"`
}

// startLog is a Go worker's record of its handler starts (mode "arrival").
type startLog struct {
	mu     sync.Mutex
	starts []startLine
}

// record notes that the handler of body started now.
func (l *startLog) record(body string) {
	now := time.Now()
	var j struct {
		Key string `json:"key"`
	}
	_ = json.Unmarshal([]byte(body), &j)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts = append(l.starts, startLine{Event: "call", Key: j.Key, UnixMill: now.UnixMilli(), UnixNano: now.UnixNano()})
}

// write writes the starts to path, one JSON line each.
func (l *startLog) write(path string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(file)
	encoder := json.NewEncoder(w)
	for _, s := range l.starts {
		if err := encoder.Encode(s); err != nil {
			file.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// readStarts reads the first handler start of each key from path.
func readStarts(path string) (map[string]time.Time, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	starts := map[string]time.Time{}
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		var s startLine
		if json.Unmarshal(scanner.Bytes(), &s) != nil || s.Event != "call" {
			continue
		}
		t := time.UnixMilli(s.UnixMill)
		if s.UnixNano != 0 {
			t = time.Unix(0, s.UnixNano)
		}
		if _, seen := starts[s.Key]; !seen {
			starts[s.Key] = t
		}
	}
	return starts, scanner.Err()
}

// arrivalResult is one latency run of one contender.
type arrivalResult struct {
	contender     string
	jobs          int // measured (after the warm-up)
	rate          float64
	p50, p99, max time.Duration
	callsPerJob   float64       // the contender's SQS calls per job over the whole run
	ready         time.Duration // from the contender's start to its first ReceiveMessage
	err           error
}

// awaitFirstReceive waits until the armed SQS proxy has seen a ReceiveMessage call (the
// contender is polling) and returns how long that took. The bench sends only then, so
// a slow start (a JVM and Spring Boot take seconds on a loaded machine) does not eat
// into the warm-up and show as the contender's latency.
func (s *session) awaitFirstReceive(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	began := time.Now()
	ticker := time.NewTicker(5 * time.Millisecond)
	defer ticker.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if counts, _, _ := s.sqsProxy.snapshot(); counts["ReceiveMessage"] > 0 {
			return time.Since(began), nil
		}
		select {
		case <-ticker.C:
		case <-deadline.C:
			return 0, fmt.Errorf("%w: no ReceiveMessage within %s of the start", errTimeout, timeout)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// measureArrival runs contender c on an empty queue while the bench sends
// rate*(warmup+duration) jobs at that Poisson rate, then reads the handler starts from
// startsFile (lambda: the session's log, shared by runs; keys are unique per run).
func (s *session) measureArrival(ctx context.Context, opts options, c contender, startsFile string) arrivalResult {
	r := arrivalResult{contender: c.name, rate: opts.arrivalRate}
	warmup := int(math.Round(opts.arrivalRate * opts.warmup.Seconds()))
	total := warmup + int(math.Round(opts.arrivalRate*opts.arrivalDuration.Seconds()))
	suffix := randomSuffix()
	output, err := s.loader.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String("bench-arrival-" + suffix), Attributes: map[string]string{"VisibilityTimeout": "60"},
	})
	if err != nil {
		r.err = err
		return r
	}
	queueURL := aws.ToString(output.QueueUrl)
	defer func() {
		_, _ = s.loader.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(queueURL)})
	}()
	env := runEnv{
		queueURL: queueURL, concurrency: opts.concurrency, mode: "arrival", sqs: s.sqsClient, ddb: s.ddbClient,
		sqsEndpoint: s.sqsProxy.URL, env: append(s.processEnv, envStartsFile+"="+startsFile), logs: s.logWriter,
	}
	if c.idempotent {
		env.table = "bench-" + suffix
		if r.err = createTable(ctx, s.admin, env.table); r.err != nil {
			return r
		}
		defer func() {
			_, _ = s.admin.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(env.table)})
		}()
	}
	_, done := s.sqsProxy.arm(0, int64(total))
	defer s.sqsProxy.disarm()
	proc, err := c.start(ctx, env)
	if err != nil {
		r.err = err
		return r
	}
	stopped := false
	defer func() {
		if !stopped {
			proc.stop()
		}
	}()
	if r.ready, r.err = s.awaitFirstReceive(ctx, opts.runTimeout); r.err != nil {
		return r
	}
	sent, err := sendArrivals(ctx, s.sqsClient, queueURL, suffix, total, opts.arrivalRate, opts.seed)
	if err != nil {
		r.err = err
		return r
	}
	select {
	case <-done:
	case <-time.After(opts.runTimeout):
		r.err = fmt.Errorf("%w after %s with %d of %d jobs deleted", errTimeout, opts.runTimeout, s.sqsProxy.deleted.Load(), total)
		return r
	case <-ctx.Done():
		r.err = ctx.Err()
		return r
	}
	counts, _, _ := s.sqsProxy.snapshot()
	proc.stop() // a Go worker writes its starts as it exits
	stopped = true
	r.callsPerJob = float64(sum(counts)-counts["SendMessage"]) / float64(total)
	starts, err := readStarts(startsFile)
	if err != nil {
		r.err = err
		return r
	}
	var latencies []time.Duration
	for i := warmup; i < total; i++ {
		key := arrivalKey(suffix, i)
		start, ok := starts[key]
		if !ok {
			r.err = fmt.Errorf("no handler start for job %s", key)
			return r
		}
		latencies = append(latencies, start.Sub(sent[i]))
	}
	slices.Sort(latencies)
	r.jobs = len(latencies)
	r.p50, r.p99, r.max = quantile(latencies, 0.50), quantile(latencies, 0.99), latencies[len(latencies)-1]
	return r
}

func arrivalKey(suffix string, i int) string { return fmt.Sprintf("a-%s-%06d", suffix, i) }

// sendArrivals sends n jobs at a Poisson rate (exponential gaps, seeded), each with its
// own SendMessage so that a slow send never delays the next arrival, and returns when
// each job was sent (the moment SendMessage was called).
func sendArrivals(ctx context.Context, client *sqs.Client, queueURL, suffix string, n int, rate float64, seed uint64) ([]time.Time, error) {
	rng := rand.New(rand.NewPCG(seed, seed+2))
	sent := make([]time.Time, n)
	errs := make([]error, n)
	var sends sync.WaitGroup
	next := time.Now()
	for i := range n {
		next = next.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		if wait := time.Until(next); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				sends.Wait()
				return nil, ctx.Err()
			}
		}
		sent[i] = time.Now()
		body := fmt.Sprintf(`{"key":%q,"sleep_ms":0}`, arrivalKey(suffix, i))
		sends.Go(func() {
			_, errs[i] = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)})
		})
	}
	sends.Wait()
	return sent, errors.Join(errs...)
}

// quantile returns the q-quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// runArrivals runs the latency runs of the contenders that report their handler starts
// and prints one line each.
func (s *session) runArrivals(ctx context.Context, opts options, all []contender, lambdaLog string) ([]arrivalResult, error) {
	dir, err := os.MkdirTemp("", "sqsworker-bench-starts-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var results []arrivalResult
	for _, c := range all {
		startsFile := fmt.Sprintf("%s/%s.jsonl", dir, c.name)
		switch {
		case c.name == "lambda_esm":
			startsFile = lambdaLog
		case c.notesStarts:
		default:
			fmt.Printf("bench: %s does not report its handler starts; no latency run\n", c.name)
			continue
		}
		r := s.measureArrival(ctx, opts, c, startsFile)
		if r.err != nil {
			fmt.Printf("bench: latency %s: %v\n", c.name, r.err)
		} else {
			fmt.Printf("bench: latency %-20s %d jobs at %.0f/s (Poisson): enqueue to handler start P50 %.1f ms, P99 %.1f ms, max %.1f ms; %.3f SQS calls per job (sends excluded); first receive %.1f s after the start\n",
				c.name, r.jobs, r.rate, ms(r.p50), ms(r.p99), ms(r.max), r.callsPerJob, r.ready.Seconds())
		}
		results = append(results, r)
	}
	return results, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
