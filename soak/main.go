// Command soak is the chaos soak of sqsworker on the local emulator (make soak).
//
// It creates its own queue (visibility timeout 10 s), dead-letter queue (maxReceiveCount
// 3) and idempotency table, builds the soak worker (./soak/worker: the poller with the
// idempotency middleware on DynamoDB) and runs three of them. It sends N messages
// (SOAK_N, default 10,000) while they run, with faults injected on purpose:
//
//   - 1% poison messages (always fail with a plain error: after exactly maxReceiveCount
//     receives they must be in the dead-letter queue, sent by the worker after the last
//     attempt with reason RetriesExhausted);
//   - 1% permanent failures (sqsworker.Permanent: dead-lettered on their first receive,
//     failure-receive-count 1);
//   - 5% transient failures (fail on the first receive only);
//   - 5% duplicate sends of an existing key (same body, a new message);
//   - three SIGKILLs of a random worker, restarted each time, and one SIGTERM drain
//     (the worker must exit 0; it is restarted), at random points of the run.
//
// The side effect is a POST to a counter server in this process that honours an
// Idempotency-Key header, as payment and webhook APIs do: exactly once cannot be had at
// an external receiver without its help, because a SIGKILL between the effect and the
// idempotency record's COMPLETED write leaves no trace in the worker. The counter keeps
// every request, so the report separates the repeats that such a SIGKILL explains (the
// earlier request came from a worker killed within the handler timeout after it; the
// receiver absorbed them) from any other repeat: effects_twice counts keys with a repeat
// that no SIGKILL explains, that is, where the idempotency middleware ran the handler
// twice on its own. It must be 0.
//
// At the end it prints one line and exits non-zero on any violation:
//
//	soak: sent=N unique=N effects_once=N effects_twice=0 lost=0 dlq_poison=N dlq_permanent=N dlq_unexpected=0 max_rss_mb=N
//
// Flags override the environment: -n (SOAK_N), -seed (SOAK_SEED), -timeout
// (SOAK_TIMEOUT); see -help.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/load"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

type options struct {
	n               int
	seed            uint64
	workers         int
	concurrency     int
	visibility      time.Duration
	maxReceiveCount int
	handlerTimeout  time.Duration
	drainTimeout    time.Duration
	timeout         time.Duration
	rssFactor       float64
	keep            bool
}

func main() {
	opts := parseOptions()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	violations, err := run(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if violations > 0 {
		os.Exit(1)
	}
}

func parseOptions() options {
	envInt := func(name string, fallback int) int {
		if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
			return n
		}
		return fallback
	}
	var opts options
	var seed int64
	flag.IntVar(&opts.n, "n", envInt("SOAK_N", 10000), "messages to send, duplicates included (env SOAK_N)")
	flag.Int64Var(&seed, "seed", int64(envInt("SOAK_SEED", 0)), "random seed of the workload and the faults; 0 picks one (env SOAK_SEED)")
	flag.IntVar(&opts.workers, "workers", 3, "worker processes")
	flag.IntVar(&opts.concurrency, "concurrency", 10, "poller Concurrency of each worker")
	flag.DurationVar(&opts.visibility, "visibility", 10*time.Second, "queue visibility timeout")
	flag.IntVar(&opts.maxReceiveCount, "max-receive-count", 3, "redrive policy maxReceiveCount")
	flag.DurationVar(&opts.handlerTimeout, "handler-timeout", 8*time.Second, "poller HandlerTimeout (and so the idempotency lease); below the visibility timeout, so a killed worker's leases end before its messages reappear")
	flag.DurationVar(&opts.drainTimeout, "drain-timeout", 5*time.Second, "poller DrainTimeout")
	timeout, _ := time.ParseDuration(os.Getenv("SOAK_TIMEOUT"))
	flag.DurationVar(&opts.timeout, "timeout", timeout, "give up waiting for the queues to settle after this long; 0 means 3 min + 30 ms per message (env SOAK_TIMEOUT)")
	flag.Float64Var(&opts.rssFactor, "rss-factor", 2, "fail when the workers' largest RSS in the last third of the run exceeds the first third's by this factor")
	flag.BoolVar(&opts.keep, "keep", false, "keep the queues, the table and the worker logs")
	flag.Parse()
	opts.seed = uint64(seed)
	if opts.seed == 0 {
		opts.seed = uint64(time.Now().UnixNano())
	}
	if opts.timeout == 0 {
		opts.timeout = 3*time.Minute + time.Duration(opts.n)*30*time.Millisecond
	}
	return opts
}

// job is a soak message body, as the worker reads it.
type job struct {
	Key    string `json:"key"`
	Fault  string `json:"fault"`
	WorkMS int    `json:"work_ms"`
}

// workload is what is sent, in order, and what is expected of it.
type workload struct {
	bodies    []string
	faults    map[string]string // key → fault ("" for none)
	effects   []string          // keys whose effect is expected (none, transient)
	unique    int
	poison    int
	permanent int
	transient int
	dups      int
}

func makeWorkload(n int, rng *rand.Rand) *workload {
	dups := n * 5 / 100
	w := &workload{faults: map[string]string{}, unique: n - dups, poison: n / 100, permanent: n / 100, transient: n * 5 / 100, dups: dups}
	type entry struct {
		position float64
		body     string
	}
	bodies := make(map[string]string, w.unique)
	entries := make([]entry, 0, n)
	order := rng.Perm(w.unique)
	var normal []int // positions of keys without a fault, for duplicates
	for position, index := range order {
		key := fmt.Sprintf("k-%06d", index)
		fault := ""
		switch {
		case index < w.poison:
			fault = "poison"
		case index < w.poison+w.permanent:
			fault = "permanent"
		case index < w.poison+w.permanent+w.transient:
			fault = "transient"
		}
		w.faults[key] = fault
		if fault == "" || fault == "transient" {
			w.effects = append(w.effects, key)
		}
		if fault == "" {
			normal = append(normal, position)
		}
		body, _ := json.Marshal(job{Key: key, Fault: fault, WorkMS: rng.IntN(31)})
		bodies[key] = string(body)
		entries = append(entries, entry{float64(position), string(body)})
	}
	rng.Shuffle(len(normal), func(i, j int) { normal[i], normal[j] = normal[j], normal[i] })
	for i := range dups {
		original := normal[i%len(normal)]
		key := fmt.Sprintf("k-%06d", order[original])
		// Half follow their original closely (likely while it is still in progress),
		// half come anywhere later (usually after it completed).
		offset := 1 + rng.IntN(20)
		if i%2 == 1 {
			offset = 1 + rng.IntN(max(w.unique-original, 1))
		}
		entries = append(entries, entry{float64(original+offset) + 0.5, bodies[key]})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].position < entries[j].position })
	for _, e := range entries {
		w.bodies = append(w.bodies, e.body)
	}
	return w
}

func run(ctx context.Context, opts options) (int, error) {
	began := time.Now()
	for _, name := range []string{"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB"} {
		if os.Getenv(name) == "" {
			return 0, fmt.Errorf("%s is not set; run `eval \"$(localstack/env)\"` (make soak does)", name)
		}
	}
	awsConfig, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return 0, err
	}
	sqsClient, ddb := sqs.NewFromConfig(awsConfig), dynamodb.NewFromConfig(awsConfig)
	rng := rand.New(rand.NewPCG(opts.seed, opts.seed^0x9e3779b97f4a7c15))
	work := makeWorkload(opts.n, rng)

	logDir, err := os.MkdirTemp("", "sqsworker-soak-")
	if err != nil {
		return 0, err
	}
	binary := filepath.Join(logDir, "soak-worker")
	build := exec.CommandContext(ctx, goCommand(), "build", "-o", binary, "github.com/sqsworker/sqsworker/soak/worker")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return 0, fmt.Errorf("building the soak worker: %w", err)
	}

	res, err := createResources(ctx, sqsClient, ddb, opts.visibility, opts.maxReceiveCount)
	if res != nil && !opts.keep {
		defer res.delete(sqsClient, ddb)
	}
	if err != nil {
		return 0, err
	}
	counter, err := startCounter()
	if err != nil {
		return 0, err
	}
	defer counter.close()

	env := append(os.Environ(),
		"SOAK_QUEUE_URL="+res.queueURL,
		"SOAK_TABLE="+res.table,
		"SOAK_COUNTER_URL="+counter.url,
		"SOAK_CONCURRENCY="+strconv.Itoa(opts.concurrency),
		"SOAK_HANDLER_TIMEOUT="+opts.handlerTimeout.String(),
		"SOAK_DRAIN_TIMEOUT="+opts.drainTimeout.String(),
	)
	workers, err := newFleet(binary, env, logDir, opts.workers)
	if err != nil {
		return 0, err
	}
	stopped := false
	defer func() {
		if !stopped {
			workers.killAll()
		}
	}()
	fmt.Printf("soak: seed=%d n=%d unique=%d poison=%d permanent=%d transient=%d duplicates=%d workers=%dx%d vt=%s mrc=%d handler_timeout=%s logs=%s\n",
		opts.seed, opts.n, work.unique, work.poison, work.permanent, work.transient, work.dups,
		opts.workers, opts.concurrency, opts.visibility, opts.maxReceiveCount, opts.handlerTimeout, logDir)

	loadStart := time.Now()
	sendErr := make(chan error, 1)
	go func() { sendErr <- load.SendBodies(ctx, sqsClient, res.queueURL, work.bodies, 4) }()

	// Faults fire when the applied effects pass random fractions of the expected ones.
	faultsDone := make(chan []string, 1)
	go func() { faultsDone <- injectFaults(ctx, workers, counter, len(work.effects), rng, opts) }()

	if err := <-sendErr; err != nil {
		return 0, fmt.Errorf("sending: %w", err)
	}
	fmt.Printf("soak: sent %d messages in %s\n", len(work.bodies), time.Since(loadStart).Round(time.Millisecond))
	faultLog := <-faultsDone
	for _, line := range faultLog {
		fmt.Println("soak:", line)
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}

	settled, waitErr := waitSettled(ctx, sqsClient, res, counter, work, opts.timeout)
	if waitErr != nil {
		return 0, waitErr
	}
	processed := time.Since(loadStart)
	finals := workers.stopAll(30 * time.Second)
	stopped = true

	letters, err := readDeadLetters(ctx, sqsClient, res.deadLetterURL)
	if err != nil {
		return 0, fmt.Errorf("reading the dead-letter queue: %w", err)
	}
	violations := evaluate(work, counter.snapshot(), letters, workers, finals, settled, opts, processed, time.Since(began))
	if violations > 0 || opts.keep {
		fmt.Printf("soak: worker logs kept in %s\n", logDir)
	} else {
		_ = os.RemoveAll(logDir)
	}
	return violations, nil
}

func goCommand() string {
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		if path := filepath.Join(goroot, "bin", "go"); fileExists(path) {
			return path
		}
	}
	return "go"
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// injectFaults runs three SIGKILLs and one SIGTERM drain, each of a random worker,
// when the applied effects pass random fractions (10% to 85%) of those expected.
func injectFaults(ctx context.Context, workers *fleet, counter *counter, expected int, rng *rand.Rand, opts options) []string {
	const kills = 3
	thresholds := make([]float64, kills+1)
	for i := range thresholds {
		thresholds[i] = 0.10 + 0.75*rng.Float64()
	}
	slices.Sort(thresholds)
	termAt := rng.IntN(len(thresholds))
	slots := make([]int, len(thresholds))
	for i := range slots {
		slots[i] = rng.IntN(opts.workers)
	}
	var log []string
	start := time.Now()
	for i, threshold := range thresholds {
		for float64(counter.applied.Load()) < threshold*float64(expected) {
			select {
			case <-ctx.Done():
				return append(log, "faults interrupted")
			case <-time.After(20 * time.Millisecond):
			}
		}
		if i == termAt {
			event, err := workers.term(slots[i], opts.drainTimeout+opts.handlerTimeout+10*time.Second)
			line := fmt.Sprintf("SIGTERM worker %d (pid %d) at %.0f%% (+%s): exit code %d after %s",
				event.slot, event.pid, 100*threshold, event.at.Sub(start).Round(time.Millisecond), event.exitCode, event.took.Round(time.Millisecond))
			if err != nil {
				line += ": " + err.Error()
			}
			log = append(log, line)
		} else {
			event, err := workers.kill(slots[i])
			line := fmt.Sprintf("SIGKILL worker %d (pid %d) at %.0f%% (+%s), restarted", event.slot, event.pid, 100*threshold, event.at.Sub(start).Round(time.Millisecond))
			if err != nil {
				line += ": " + err.Error()
			}
			log = append(log, line)
		}
	}
	return log
}

// waitSettled waits until every expected effect is applied, the dead-letter queue holds
// at least the poison and permanent messages, and the source queue is empty, twice in a
// row; or until timeout. It reports whether the queues settled.
func waitSettled(ctx context.Context, client *sqs.Client, res *resources, counter *counter, work *workload, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	calm := 0
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		source, err := sqsinfo.QueueDepth(ctx, client, res.queueURL)
		if err != nil {
			continue
		}
		deadLetters, err := sqsinfo.QueueDepth(ctx, client, res.deadLetterURL)
		if err != nil {
			continue
		}
		if int(counter.applied.Load()) >= len(work.effects) && source.Total() == 0 && deadLetters.Visible >= work.poison+work.permanent {
			calm++
			if calm >= 2 {
				return true, nil
			}
		} else {
			calm = 0
		}
	}
	return false, nil
}

// evaluation is the check of one run: the inputs, the violations found, and the
// figures the result lines print.
type evaluation struct {
	work       *workload
	keys       map[string]keyRecord
	opts       options
	kills      []signalEvent
	violations []string

	effectsOnce, effectsTwice, lost, absorbed int
	poisonFound, permanentCopies              map[string]int
	unexpected, failedOnFirst, extraCopies    int
	poisonDeliveries                          []int
	maxKB, firstKB, lastKB                    int
}

func (e *evaluation) violate(format string, args ...any) {
	e.violations = append(e.violations, fmt.Sprintf(format, args...))
}

// evaluate checks everything and prints the result lines; it returns the number of
// violations.
func evaluate(work *workload, keys map[string]keyRecord, letters []deadLetter, workers *fleet, finals []signalEvent,
	settled bool, opts options, processed, total time.Duration) int {
	e := &evaluation{work: work, keys: keys, opts: opts}
	if !settled {
		e.violate("the queues did not settle within %s", opts.timeout)
	}
	workers.mu.Lock()
	e.kills = append([]signalEvent(nil), workers.kills...)
	terms := append([]signalEvent(nil), workers.terms...)
	unexpectedExits := append([]string(nil), workers.unexpected...)
	samples := append([]rssSample(nil), workers.samples...)
	workers.mu.Unlock()
	e.checkSignals(terms, finals, unexpectedExits)
	e.checkEffects()
	e.checkDeadLetters(letters)
	e.checkMemory(samples)
	e.print(processed, total)
	return len(e.violations)
}

// checkSignals: three SIGKILLs, one SIGTERM drain, and every drained worker exited 0.
func (e *evaluation) checkSignals(terms, finals []signalEvent, unexpectedExits []string) {
	for _, exit := range unexpectedExits {
		e.violate("%s", exit)
	}
	if len(e.kills) != 3 {
		e.violate("%d SIGKILLs were sent, want 3", len(e.kills))
	}
	if len(terms) != 1 {
		e.violate("%d SIGTERM drains were done, want 1", len(terms))
	}
	for _, event := range append(terms, finals...) {
		if event.exitCode != 0 {
			e.violate("worker pid %d exited with code %d after SIGTERM, want 0", event.pid, event.exitCode)
		}
	}
}

// inFlight bounds how long after a killed worker was reaped the counter may still stamp
// a request it sent: the counter stamps a request when its handler runs, after reading
// it from the socket, so a request sent just before the SIGKILL can be stamped after the
// kill (seen in CI: an effect stamped 77 µs after the kill's own stamp, then repeated
// by the redelivery, and reported as unexplained). A dead process sends nothing, so such
// a request was sent before the kill.
const inFlight = time.Second

// killedAfter reports whether a request (delivery or effect) is explained by a SIGKILL:
// its worker was killed within the handler timeout plus the idempotency store timeout
// after sending it. A request is taken as sent before the kill when the counter stamped
// it no later than inFlight after the worker was reaped.
func (e *evaluation) killedAfter(r request) bool {
	window := e.opts.handlerTimeout + 5*time.Second
	for _, kill := range e.kills {
		if kill.pid == r.pid && !r.at.After(kill.reaped.Add(inFlight)) && kill.at.Sub(r.at) <= window {
			return true
		}
	}
	return false
}

// describe prints what the counter saw of key and the kills, for a violation's reader.
func (e *evaluation) describe(key string) {
	record := e.keys[key]
	for _, d := range record.deliveries {
		fmt.Printf("soak:   %s delivery pid=%d at=%s receive_count=%d message_id=%s\n", key, d.pid, d.at.Format(time.RFC3339Nano), d.receiveCount, d.messageID)
	}
	for _, effect := range record.effects {
		fmt.Printf("soak:   %s effect pid=%d at=%s attempt=%s\n", key, effect.pid, effect.at.Format(time.RFC3339Nano), effect.attempt)
	}
	if record.replays > 0 {
		fmt.Printf("soak:   %s effect requests resent by the HTTP transport: %d\n", key, record.replays)
	}
	for _, kill := range e.kills {
		fmt.Printf("soak:   kill pid=%d at=%s reaped=%s\n", kill.pid, kill.at.Format(time.RFC3339Nano), kill.reaped.Format(time.RFC3339Nano))
	}
}

// checkEffects: every expected effect happened once; a repeat only after a SIGKILL.
func (e *evaluation) checkEffects() {
	var twiceKeys []string
	for _, key := range e.work.effects {
		if len(e.keys[key].effects) == 0 {
			e.lost++
			continue
		}
		e.effectsOnce++ // the receiver applies the first request for a key only
	}
	for key, record := range e.keys {
		fault, known := e.work.faults[key]
		if len(record.effects) > 0 && (!known || fault == "poison" || fault == "permanent") {
			e.violate("key %q (fault %q) had %d effects, want none", key, fault, len(record.effects))
		}
		explained := true
		for i := 1; i < len(record.effects); i++ {
			if e.killedAfter(record.effects[i-1]) {
				e.absorbed++
			} else {
				explained = false
			}
		}
		if !explained {
			e.effectsTwice++
			twiceKeys = append(twiceKeys, key)
		}
	}
	if e.effectsTwice > 0 {
		slices.Sort(twiceKeys)
		e.violate("effects repeated without a SIGKILL to explain them, keys %s", strings.Join(twiceKeys[:min(len(twiceKeys), 10)], ","))
		for _, key := range twiceKeys[:min(len(twiceKeys), 3)] {
			e.describe(key)
		}
	}
	if e.lost > 0 {
		e.violate("%d expected effects never happened", e.lost)
	}
	if e.effectsOnce != len(e.work.effects) {
		e.violate("effects_once=%d, want %d", e.effectsOnce, len(e.work.effects))
	}
}

func (e *evaluation) killedDeliveries(key string) int {
	n := 0
	for _, d := range e.keys[key].deliveries {
		if e.killedAfter(d.request) {
			n++
		}
	}
	return n
}

// checkDeadLetters: a poison message's failed attempt at maxReceiveCount is its last, so
// the poller sends it to the dead-letter queue itself (reason RetriesExhausted): a new
// message, receive count 1, whose failure-receive-count is that receive (more than
// maxReceiveCount only when a SIGKILLed worker had one of its receives). When the worker
// holding its last receive was SIGKILLed, the redrive policy moves it instead: the
// emulator keeps its receive count and our read adds one, maxReceiveCount + 1, without
// failure attributes. A permanent failure is a new message sent by the poller: it shows
// 1, and its failure-receive-count attribute is the receive on which it failed.
func (e *evaluation) checkDeadLetters(letters []deadLetter) {
	e.poisonFound, e.permanentCopies = map[string]int{}, map[string]int{}
	for _, letter := range letters {
		switch {
		case letter.fault == "poison" && (!letter.hasFailureAttributes && letter.receiveCount == e.opts.maxReceiveCount+1 ||
			letter.failureReason == sqsworker.ReasonRetriesExhausted && letter.receiveCount == 1 &&
				letter.failureReceiveCount >= e.opts.maxReceiveCount && letter.failureReceiveCount-e.opts.maxReceiveCount <= e.killedDeliveries(letter.key)):
			e.poisonFound[letter.key]++
			e.poisonDeliveries = append(e.poisonDeliveries, len(e.keys[letter.key].deliveries))
		case letter.fault == "permanent" && letter.failureReason == "SoakPermanent" && letter.receiveCount == 1 &&
			letter.failureReceiveCount >= 1 && letter.failureReceiveCount-1 <= e.killedDeliveries(letter.key):
			e.permanentCopies[letter.key]++
			if letter.failureReceiveCount == 1 {
				e.failedOnFirst++
			}
		default:
			e.unexpected++
			e.violate("unexpected dead letter: key %q fault %q receive count %d failure-reason %q failure-receive-count %d (killed deliveries %d)",
				letter.key, letter.fault, letter.receiveCount, letter.failureReason, letter.failureReceiveCount, e.killedDeliveries(letter.key))
		}
	}
	for key, copies := range e.poisonFound {
		// A SIGKILL after the send and before the delete leaves a second copy.
		if copies-1 > e.killedDeliveries(key) {
			e.violate("poison key %q is %d times in the dead-letter queue, %d explained by SIGKILL", key, copies, e.killedDeliveries(key))
		}
	}
	for key, copies := range e.permanentCopies {
		if copies-1 > e.killedDeliveries(key) {
			e.violate("permanent key %q is %d times in the dead-letter queue, %d explained by SIGKILL", key, copies, e.killedDeliveries(key))
		}
		e.extraCopies += copies - 1
	}
	if len(e.poisonFound) != e.work.poison {
		e.violate("dlq_poison=%d, want %d", len(e.poisonFound), e.work.poison)
	}
	if len(e.permanentCopies) != e.work.permanent {
		e.violate("dlq_permanent=%d, want %d", len(e.permanentCopies), e.work.permanent)
	}
}

// checkMemory: the workers' largest RSS in the last third of the run against the first.
func (e *evaluation) checkMemory(samples []rssSample) {
	if len(samples) == 0 {
		e.violate("no RSS samples")
		return
	}
	start, end := samples[0].at, samples[len(samples)-1].at
	third := end.Sub(start) / 3
	for _, s := range samples {
		e.maxKB = max(e.maxKB, s.kB)
		switch {
		case s.at.Before(start.Add(third)):
			e.firstKB = max(e.firstKB, s.kB)
		case !s.at.Before(end.Add(-third)):
			e.lastKB = max(e.lastKB, s.kB)
		}
	}
	if e.firstKB > 0 && float64(e.lastKB) > e.opts.rssFactor*float64(e.firstKB) {
		e.violate("worker RSS grew: last third max %d kB > %.1f x first third max %d kB", e.lastKB, e.opts.rssFactor, e.firstKB)
	}
}

// print prints the detail line, the violations and the soak line.
func (e *evaluation) print(processed, total time.Duration) {
	deliveries, resends := 0, 0
	for _, record := range e.keys {
		deliveries += len(record.deliveries)
		resends += record.replays
	}
	slices.Sort(e.poisonDeliveries)
	fmt.Printf("soak: processed in %s (total %s incl. build and setup); deliveries=%d; effect requests resent by net/http (one attempt, not counted as effects)=%d; effect repeats absorbed by the receiver after a SIGKILL between the effect and COMPLETED=%d; permanent dead letters with failure-receive-count 1=%d of %d (others: an earlier receive died with a SIGKILLed worker), extra copies after SIGKILL=%d; poison deliveries recorded per key min=%d max=%d; rss first_third_max_mb=%.1f last_third_max_mb=%.1f\n",
		processed.Round(time.Millisecond), total.Round(time.Millisecond), deliveries, resends, e.absorbed, e.failedOnFirst, len(e.permanentCopies)+e.extraCopies, e.extraCopies,
		first(e.poisonDeliveries), last(e.poisonDeliveries), float64(e.firstKB)/1024, float64(e.lastKB)/1024)
	for _, v := range e.violations {
		fmt.Println("soak: VIOLATION:", v)
	}
	fmt.Printf("soak: sent=%d unique=%d effects_once=%d effects_twice=%d lost=%d dlq_poison=%d dlq_permanent=%d dlq_unexpected=%d max_rss_mb=%d\n",
		len(e.work.bodies), e.work.unique, e.effectsOnce, e.effectsTwice, e.lost, len(e.poisonFound), len(e.permanentCopies), e.unexpected, (e.maxKB+1023)/1024)
}

func first(values []int) int {
	if len(values) == 0 {
		return 0
	}
	return values[0]
}

func last(values []int) int {
	if len(values) == 0 {
		return 0
	}
	return values[len(values)-1]
}
