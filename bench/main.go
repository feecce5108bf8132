// Command bench runs sqsworker's side-by-side benchmark on the local emulator (make bench;
// make bench-elasticmq for ElasticMQ): the same kind of pre-loaded queue and the same
// concurrency (20) for every contender, in one run:
//
//  1. ceiling: a minimal Go loop (receive 10, handle them, one DeleteMessageBatch);
//  2. poller: the sqsworker poller with the same handler;
//  3. poller_idempotency: the poller with the idempotency middleware (DynamoDB);
//  4. sqs_consumer: the Node.js sqs-consumer, installed into scripts/bench-node;
//  5. spring: Spring Cloud AWS SQS's listener container (Java), built into bench/spring;
//  6. lambda_esm: `sqsworker esm` feeding the lambda adapter in Runtime Interface
//     Emulators;
//
// and, for the highest rate of one worker process, the poller alone at the
// concurrencies of -max-concurrency (100 and 200). Every contender runs in a process of
// its own (the Go ones are this program again, with -worker).
//
// Each runs twice per repeat: with a no-op handler and with a handler that waits
// 10-200 ms (seeded: the same delays, carried in the bodies, for every contender).
// Contenders run one after another, interleaved per repeat (the order rotates), and
// every figure is the median of the repeats (BENCH_REPEATS, default 3).
//
// Every SQS and DynamoDB call goes through one counting reverse proxy per service, the
// same for all contenders; with -latency (BENCH_LATENCY, for example 10ms) the SQS proxy
// delays every call by that much, ±25%, as the network to SQS would. The clock runs on
// confirmed deletes: it starts when the proxy saw the warm-up's last message deleted
// (JIT, connection pools and long polls warmed) and stops at the run's last. Runs are
// sized from a sizing pass per contender and mode so that the warm-up lasts -warmup (3 s)
// and the measured part -duration (10 s). Throughput is the messages deleted while the
// clock ran divided by its time; API calls and the process's CPU time are counted over
// the same span. A duplicate pass re-sends the keys the idempotency contender completed
// and counts the DynamoDB writes per duplicate.
//
// It prints one line (see summary.line) and, with -docs, writes the Markdown report and,
// with -chart, the PNG chart.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sqsworker/sqsworker/internal/testing/load"
	"github.com/sqsworker/sqsworker/provision"
)

type options struct {
	concurrency    int
	maxConcurrency []int // extra poller runs (no-op) at these concurrencies: the max rate
	repeats        int
	seed           uint64
	contenders     []string
	modes          []string
	root           string
	docs           string
	chart          string
	cpuprofile     string
	logFile        string
	runTimeout     time.Duration
	duration       time.Duration // a measured run lasts at least this long
	warmup         time.Duration // deletes before the clock starts, sized to last this long
	latency        time.Duration // per call, in the SQS proxy
	emulator       string
	maxMessages    int
	worker         string
	// arrivalRate (jobs/s) switches to the latency runs (arrival.go) for
	// arrivalDuration after the warm-up; 0: the throughput runs.
	arrivalRate     float64
	arrivalDuration time.Duration
}

func parseOptions() options {
	envInt := func(name string, fallback int) int {
		if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
			return n
		}
		return fallback
	}
	envDuration := func(name string, fallback time.Duration) time.Duration {
		if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d >= 0 {
			return d
		}
		return fallback
	}
	var opts options
	var contenders, modes, maxConcurrency string
	var seed int64
	flag.IntVar(&opts.concurrency, "concurrency", 20, "messages handled at the same time by every contender (a multiple of 10)")
	flag.StringVar(&maxConcurrency, "max-concurrency", envString("BENCH_MAX_CONCURRENCY", "100,200"), "extra no-op poller runs at these concurrencies, for the highest rate of one worker process; \"none\" for none (env BENCH_MAX_CONCURRENCY)")
	flag.IntVar(&opts.repeats, "repeats", envInt("BENCH_REPEATS", 3), "repeats of every measurement; the median is reported (env BENCH_REPEATS)")
	flag.DurationVar(&opts.duration, "duration", envDuration("BENCH_DURATION", 10*time.Second), "each measured run is sized to last at least this long (env BENCH_DURATION)")
	flag.DurationVar(&opts.warmup, "warmup", envDuration("BENCH_WARMUP", 3*time.Second), "deletes before the clock starts, sized to last this long (env BENCH_WARMUP)")
	flag.DurationVar(&opts.latency, "latency", envDuration("BENCH_LATENCY", 0), "added to every SQS call by the proxy, ±25% (env BENCH_LATENCY, for example 10ms)")
	flag.IntVar(&opts.maxMessages, "max-messages", envInt("BENCH_MAX_MESSAGES", 200000), "at most this many messages in one run's queue (env BENCH_MAX_MESSAGES)")
	flag.Int64Var(&seed, "seed", 1, "seed of the 10-200 ms handler delays")
	flag.StringVar(&contenders, "contenders", envString("BENCH_CONTENDERS", "ceiling,poller,poller_idempotency,sqs_consumer,spring,lambda_esm"), "contenders to run (env BENCH_CONTENDERS)")
	flag.StringVar(&modes, "modes", "noop,slow", "handler modes: noop, slow (10-200 ms)")
	flag.StringVar(&opts.root, "root", "..", "the sqsworker repository root")
	flag.StringVar(&opts.docs, "docs", "", "write the Markdown report here (for example ../docs/benchmarks.md)")
	flag.StringVar(&opts.chart, "chart", "", "write the PNG chart here (for example ../docs/benchmarks.png)")
	flag.StringVar(&opts.cpuprofile, "cpuprofile", "", "write CPU profiles of the poller's worker processes during their first measured no-op run (the contender's name is added to the file name)")
	flag.StringVar(&opts.logFile, "log", "", "append the contenders' logs here (default: a temporary file)")
	flag.DurationVar(&opts.runTimeout, "run-timeout", 5*time.Minute, "give up on one run after this long")
	flag.StringVar(&opts.worker, "worker", "", "internal: run this Go contender in this process (the bench starts it)")
	flag.Float64Var(&opts.arrivalRate, "arrival-rate", float64(envInt("BENCH_ARRIVAL_RATE", 0)), "instead of the throughput runs, the latency runs: jobs sent at this Poisson rate (jobs/s) to an empty queue, enqueue-to-handler-start P50/P99 (env BENCH_ARRIVAL_RATE, for example 200)")
	flag.DurationVar(&opts.arrivalDuration, "arrival-duration", envDuration("BENCH_ARRIVAL_DURATION", 20*time.Second), "how long the latency runs send after the warm-up (env BENCH_ARRIVAL_DURATION)")
	flag.Parse()
	opts.emulator = envString("SQSWORKER_SQS_EMULATOR", "localstack")
	opts.seed = uint64(seed)
	opts.contenders = strings.Split(contenders, ",")
	opts.modes = strings.Split(modes, ",")
	if maxConcurrency != "none" && maxConcurrency != "" {
		for _, field := range strings.Split(maxConcurrency, ",") {
			if n, err := strconv.Atoi(field); err == nil && n > 0 {
				opts.maxConcurrency = append(opts.maxConcurrency, n)
			}
		}
	}
	return opts
}

func envString(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func main() {
	opts := parseOptions()
	if opts.worker != "" {
		if err := runWorker(opts.worker); err != nil {
			fmt.Fprintln(os.Stderr, "bench worker:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// result is one run of one contender in one mode.
type result struct {
	contender, mode string
	repeat          int
	warmup          int // messages deleted before the clock started
	measured        int // messages deleted while it ran
	slotBound       float64
	elapsed         time.Duration
	cpu             time.Duration // of the contender's process while the clock ran; 0 when unknown
	proxyCPU        time.Duration // of this process (the proxies) while the clock ran
	emulatorCPU     time.Duration // of the SQS emulator's process while the clock ran; 0 when unknown
	sqsCalls        map[string]int64
	ddbCalls        map[string]int64 // over the whole run, warm-up included
	dupDDBCalls     map[string]int64 // the duplicate pass (idempotency contender, no-op mode)
	err             error
}

func (r result) perSecond() float64 {
	if r.err != nil || r.elapsed <= 0 {
		return 0
	}
	return float64(r.measured) / r.elapsed.Seconds()
}

// callsPerMsg is the SQS calls per message while the clock ran.
func (r result) callsPerMsg() float64 { return float64(sum(r.sqsCalls)) / float64(r.measured) }

// cpuPer1k is the contender's CPU milliseconds per 1,000 messages, NaN when unknown.
func (r result) cpuPer1k() float64 {
	if r.cpu <= 0 {
		return math.NaN()
	}
	return perThousand(r.cpu, r.measured)
}

// perThousand is cpu in milliseconds per 1,000 of n messages, NaN when unknown.
func perThousand(cpu time.Duration, n int) float64 {
	if cpu <= 0 || n <= 0 {
		return math.NaN()
	}
	return float64(cpu.Microseconds()) / float64(n)
}

// session is what one bench run sets up once: its log, the clients (direct, and through
// the counting proxies) and what to close at the end.
type session struct {
	logPath            string
	logWriter          io.Writer
	loader             *sqs.Client
	admin              *dynamodb.Client
	sqsClient          *sqs.Client
	ddbClient          *dynamodb.Client
	sqsProxy, ddbProxy *countingProxy
	processEnv         []string
	lambdaLog          string // the lambdatest bootstrap's LAMBDATEST_LOG (latency runs)
	cleanups           []func()
}

func (s *session) close() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

func run(ctx context.Context, opts options) error {
	for _, name := range []string{"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB"} {
		if os.Getenv(name) == "" {
			return fmt.Errorf("%s is not set; run `eval \"$(localstack/env)\"` (make bench does)", name)
		}
	}
	root, err := filepath.Abs(opts.root)
	if err != nil {
		return err
	}
	s := &session{}
	defer s.close()
	if err := s.openLog(opts); err != nil {
		return err
	}
	fmt.Printf("bench: emulator=%s latency=%s concurrency=%d duration=%s warmup=%s repeats=%d contenders=%s modes=%s logs=%s\n",
		opts.emulator, opts.latency, opts.concurrency, opts.duration, opts.warmup, opts.repeats,
		strings.Join(opts.contenders, ","), strings.Join(opts.modes, ","), s.logPath)
	if err := s.connect(ctx, opts.latency); err != nil {
		return err
	}
	info := machineInfo(ctx, root, opts.emulator)
	if opts.arrivalRate > 0 {
		dir, err := os.MkdirTemp("", "sqsworker-bench-lambda-log-")
		if err != nil {
			return err
		}
		s.cleanups = append(s.cleanups, func() { os.RemoveAll(dir) })
		s.lambdaLog = filepath.Join(dir, "starts.jsonl")
		opts.maxConcurrency = nil
	}
	all, notes, err := s.contenders(opts, root, info)
	if err != nil {
		return err
	}
	if opts.arrivalRate > 0 {
		_, err := s.runArrivals(ctx, opts, all, s.lambdaLog)
		return err
	}
	began := time.Now()
	results, err := s.measureAll(ctx, opts, all)
	if err != nil {
		return err
	}
	summary := summarize(opts, all, results)
	summary.duration = time.Since(began)
	summary.info = info
	summary.notes = notes
	return s.report(opts, summary, results)
}

// openLog opens the log every contender's output goes to.
func (s *session) openLog(opts options) error {
	s.logPath = opts.logFile
	if s.logPath == "" {
		s.logPath = filepath.Join(os.TempDir(), fmt.Sprintf("sqsworker-bench-%d.log", os.Getpid()))
	}
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	s.cleanups = append(s.cleanups, func() { logFile.Close() })
	s.logWriter = &lockedWriter{w: logFile}
	return nil
}

// connect makes the direct clients (loading, administration) and the proxied ones the
// contenders use, so that their calls are counted.
func (s *session) connect(ctx context.Context, latency time.Duration) error {
	direct, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	s.loader = sqs.NewFromConfig(direct)
	s.admin = dynamodb.NewFromConfig(direct)
	if s.sqsProxy, err = startProxy(os.Getenv("AWS_ENDPOINT_URL_SQS"), latency); err != nil {
		return err
	}
	s.cleanups = append(s.cleanups, s.sqsProxy.close)
	if s.ddbProxy, err = startProxy(os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), 0); err != nil {
		return err
	}
	s.cleanups = append(s.cleanups, s.ddbProxy.close)
	proxied := direct.Copy()
	s.sqsClient = sqs.NewFromConfig(proxied, func(o *sqs.Options) { o.BaseEndpoint = aws.String(s.sqsProxy.URL) })
	s.ddbClient = dynamodb.NewFromConfig(proxied, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(s.ddbProxy.URL) })
	s.processEnv = append(os.Environ(), "AWS_ENDPOINT_URL_SQS="+s.sqsProxy.URL, "AWS_ENDPOINT_URL_DYNAMODB="+s.ddbProxy.URL)
	return nil
}

// contenders builds the contenders asked for; one that cannot run here (no Node.js, no
// Lambda build) is left out with a note.
func (s *session) contenders(opts options, root string, info info) ([]contender, []string, error) {
	var all []contender
	var notes []string
	for _, name := range opts.contenders {
		switch name {
		case "ceiling":
			all = append(all, goContender("ceiling", "ceiling", "Go loop (ceiling)", false))
		case "poller":
			all = append(all, goContender("poller", "poller", "sqsworker poller", false))
		case "poller_idempotency":
			all = append(all, goContender("poller_idempotency", "poller_idempotency", "poller + idempotency (DynamoDB)", true))
		case "spring":
			jar, versions, err := ensureSpring(filepath.Join(root, "bench", "spring"), s.logWriter)
			if err != nil {
				notes = append(notes, fmt.Sprintf("Spring Cloud AWS not run: %v", err))
				fmt.Println("bench: Spring Cloud AWS not run:", err)
				continue
			}
			for k, v := range versions {
				info.versions[k] = v
			}
			all = append(all, springContender(jar))
		case "sqs_consumer":
			nodeDir := filepath.Join(root, "scripts", "bench-node")
			versions, err := ensureNode(nodeDir, s.logWriter)
			if err != nil {
				notes = append(notes, fmt.Sprintf("sqs-consumer not run: %v", err))
				fmt.Println("bench: sqs-consumer not run:", err)
				continue
			}
			for k, v := range versions {
				info.versions[k] = v
			}
			all = append(all, sqsConsumerContender(nodeDir))
		case "lambda_esm":
			binDir, err := os.MkdirTemp("", "sqsworker-bench-bin-")
			if err != nil {
				return nil, nil, err
			}
			s.cleanups = append(s.cleanups, func() { os.RemoveAll(binDir) })
			lambdaEnv := s.processEnv
			if s.lambdaLog != "" {
				lambdaEnv = append(slices.Clone(lambdaEnv), "LAMBDATEST_LOG="+s.lambdaLog)
			}
			path, err := buildLambdaPath(root, binDir, opts.concurrency, lambdaEnv, s.logWriter)
			if err != nil {
				notes = append(notes, fmt.Sprintf("Lambda path not run: %v", err))
				fmt.Println("bench: Lambda path not run:", err)
				continue
			}
			s.cleanups = append(s.cleanups, path.close)
			all = append(all, path.contender())
		default:
			return nil, nil, fmt.Errorf("unknown contender %q", name)
		}
	}
	for _, n := range opts.maxConcurrency {
		c := goContender(maxRateName(n), "poller", fmt.Sprintf("poller, concurrency %d", n), false)
		c.concurrency, c.noopOnly = n, true
		all = append(all, c)
	}
	return all, notes, nil
}

// maxRateName names the poller's contender at concurrency n (the max-rate runs).
func maxRateName(n int) string { return fmt.Sprintf("poller_c%d", n) }

// measureAll sizes every contender in every mode (a short sizing pass) and runs them,
// opts.repeats times, rotating the order.
func (s *session) measureAll(ctx context.Context, opts options, all []contender) ([]result, error) {
	// The same delays for every contender: drawn once, carried in the bodies.
	rng := rand.New(rand.NewPCG(opts.seed, opts.seed+1))
	delays := make([]int, opts.maxMessages)
	for i := range delays {
		delays[i] = 10 + rng.IntN(191)
	}
	// The first measured no-op run of each poller contender is profiled, into
	// -cpuprofile with the contender's name added (poller.prof -> poller-poller_c200.prof).
	profiled := map[string]bool{}
	run := func(c contender, mode string, warmup, measured, repeat int) result {
		env := runEnv{
			concurrency: opts.concurrency, mode: mode, sqs: s.sqsClient, ddb: s.ddbClient,
			sqsEndpoint: s.sqsProxy.URL, env: s.processEnv, logs: s.logWriter,
		}
		if c.concurrency > 0 {
			env.concurrency = c.concurrency
		}
		if opts.cpuprofile != "" && !profiled[c.name] && repeat > 0 && strings.HasPrefix(c.name, "poller") && !c.idempotent && mode == "noop" {
			ext := filepath.Ext(opts.cpuprofile)
			env.cpuprofile = strings.TrimSuffix(opts.cpuprofile, ext) + "-" + c.name + ext
			profiled[c.name] = true
		}
		bodies := makeBodies(warmup+measured, mode, delays)
		r := s.measure(ctx, opts, c, mode, bodies, warmup, env)
		r.repeat = repeat
		return r
	}
	// rates are the sizing estimates (msg/s), by contender and mode.
	rates := map[string]float64{}
	var runs []struct {
		c    contender
		mode string
	}
	for _, mode := range opts.modes {
		for _, c := range all {
			if mode != "noop" && c.noopOnly {
				continue
			}
			runs = append(runs, struct {
				c    contender
				mode string
			}{c, mode})
			concurrency := cmp.Or(c.concurrency, opts.concurrency)
			// The sizing pass: 25 messages per slot (3 with the 10-200 ms handler), then,
			// if that took less than a second, three seconds' worth at the rate seen.
			n := concurrency * 25
			if mode == "slow" {
				n = concurrency * 3
			}
			var r result
			for pass := 0; pass < 2; pass++ {
				r = run(c, mode, n/2, n-n/2, 0)
				if r.err != nil || r.elapsed*2 >= time.Second {
					break
				}
				n = min(int(r.perSecond()*3), opts.maxMessages)
			}
			if r.err != nil {
				fmt.Printf("bench: sizing %-6s %-20s FAILED: %v\n", mode, c.name, r.err)
				continue
			}
			rates[c.name+"/"+mode] = r.perSecond()
			fmt.Printf("bench: sizing %-6s %-20s %.0f msg/s\n", mode, c.name, r.perSecond())
		}
	}
	var results []result
	for repeat := range opts.repeats {
		order := slices.Clone(runs)
		// Rotate the order every repeat, so no contender always runs first or last.
		if len(order) > 0 {
			shift := repeat % len(order)
			order = append(order[shift:], order[:shift]...)
		}
		for _, o := range order {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			key := o.c.name + "/" + o.mode
			rate := rates[key]
			if rate <= 0 {
				rate = 100 // the sizing pass failed; this run shows how
			}
			warmup := max(int(rate*opts.warmup.Seconds()), 10)
			measured := max(int(rate*opts.duration.Seconds()*1.1), 100)
			if warmup+measured > opts.maxMessages {
				measured = max(opts.maxMessages-warmup, 100)
			}
			r := run(o.c, o.mode, warmup, measured, repeat+1)
			if r.err == nil && r.elapsed < opts.duration*9/10 && warmup+measured < opts.maxMessages {
				// Faster than sized: once more, sized on this run's rate.
				fmt.Printf("bench: repeat %d %-6s %-20s %s; too short, again\n", repeat+1, o.mode, o.c.name, r.status(o.c.idempotent))
				rate = r.perSecond()
				warmup = max(int(rate*opts.warmup.Seconds()), 10)
				measured = min(max(int(rate*opts.duration.Seconds()*1.1), 100), opts.maxMessages-warmup)
				r = run(o.c, o.mode, warmup, measured, repeat+1)
			}
			results = append(results, r)
			if r.err == nil {
				rates[key] = max(rate, r.perSecond())
			}
			fmt.Printf("bench: repeat %d %-6s %-20s %s\n", repeat+1, o.mode, o.c.name, r.status(o.c.idempotent))
		}
	}
	return results, nil
}

// status is one run's progress line.
func (r result) status(idempotent bool) string {
	if r.err != nil {
		return "FAILED: " + r.err.Error()
	}
	status := fmt.Sprintf("%.0f msg/s over %s (%d messages after %d warm-up), %.3f SQS calls/msg", r.perSecond(),
		r.elapsed.Round(10*time.Millisecond), r.measured, r.warmup, r.callsPerMsg())
	if cpu := r.cpuPer1k(); !math.IsNaN(cpu) {
		status += fmt.Sprintf(", %.0f ms CPU/1k msgs", cpu)
	}
	status += fmt.Sprintf(" (proxy %.0f", perThousand(r.proxyCPU, r.measured))
	if emulator := perThousand(r.emulatorCPU, r.measured); !math.IsNaN(emulator) {
		status += fmt.Sprintf(", emulator %.0f", emulator)
	}
	status += ")"
	total := float64(r.warmup + r.measured)
	if idempotent {
		status += fmt.Sprintf(", %.2f DynamoDB writes/msg", float64(ddbWrites(r.ddbCalls))/total)
		if r.dupDDBCalls != nil {
			status += fmt.Sprintf(", %.2f per duplicate", float64(ddbWrites(r.dupDDBCalls))/total)
		}
	}
	return status
}

// report prints the table and the bench line, writes the chart and the docs, and
// fails when a run did.
func (s *session) report(opts options, summary *summary, results []result) error {
	fmt.Print(summary.table())
	if opts.chart != "" {
		if err := summary.writeChart(opts.chart); err != nil {
			return fmt.Errorf("writing the chart: %w", err)
		}
	}
	if opts.docs != "" {
		chart := ""
		if opts.chart != "" {
			chart, _ = filepath.Rel(filepath.Dir(opts.docs), opts.chart)
		}
		if err := os.WriteFile(opts.docs, []byte(summary.markdown(opts, chart)), 0o644); err != nil {
			return err
		}
	}
	fmt.Println(summary.line())
	failed := 0
	for _, r := range results {
		if r.err != nil {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d runs failed (see above and %s)", failed, len(results), s.logPath)
	}
	return nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func makeBodies(m int, mode string, delays []int) []string {
	bodies := make([]string, m)
	for i := range bodies {
		delay := 0
		if mode == "slow" {
			delay = delays[i]
		}
		bodies[i] = fmt.Sprintf(`{"key":"b-%06d","sleep_ms":%d}`, i, delay)
	}
	return bodies
}

// measure loads a fresh queue with bodies, runs the contender until the proxy saw every
// message deleted, the clock running from the warmup-th delete, and for the idempotency
// contender in no-op mode runs the duplicate pass.
func (s *session) measure(ctx context.Context, opts options, c contender, mode string, bodies []string, warmup int, env runEnv) result {
	r := result{contender: c.name, mode: mode, warmup: warmup, measured: len(bodies) - warmup}
	if mode == "slow" {
		total := 0
		for _, body := range bodies {
			var ms int
			_, _ = fmt.Sscanf(body[strings.Index(body, `"sleep_ms":`)+len(`"sleep_ms":`):], "%d", &ms)
			total += ms
		}
		r.slotBound = float64(env.concurrency) * 1000 * float64(len(bodies)) / float64(total)
	}
	suffix := randomSuffix()
	if c.idempotent {
		env.table = "bench-" + suffix
		if r.err = createTable(ctx, s.admin, env.table); r.err != nil {
			return r
		}
		defer func() {
			_, _ = s.admin.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(env.table)})
		}()
	}
	type outcome struct {
		elapsed, cpu, proxyCPU, emulatorCPU time.Duration
		sqs, ddb                            map[string]int64
	}
	emulator := emulatorProcess(opts.root, opts.emulator)
	pass := func(name string, warmup int, profile string) (outcome, error) {
		var o outcome
		queueURL, err := loadQueue(ctx, s.loader, name, bodies)
		if queueURL != "" {
			defer func() {
				_, _ = s.loader.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(queueURL)})
			}()
		}
		if err != nil {
			return o, err
		}
		env.queueURL, env.cpuprofile = queueURL, profile
		warm, done := s.sqsProxy.arm(int64(warmup), int64(len(bodies)))
		s.ddbProxy.arm(0, 0)
		defer s.sqsProxy.disarm()
		defer s.ddbProxy.disarm()
		proc, err := c.start(ctx, env)
		if err != nil {
			return o, err
		}
		stopped := false
		defer func() {
			if !stopped {
				proc.stop()
			}
		}()
		timeout := time.NewTimer(opts.runTimeout)
		defer timeout.Stop()
		var cpuAtWarm, proxyAtWarm, emulatorAtWarm time.Duration
		cpuKnown := !c.noCPU
		for _, phase := range []<-chan struct{}{warm, done} {
			select {
			case <-phase:
			case <-timeout.C:
				return o, fmt.Errorf("%w after %s with %d of %d messages deleted", errTimeout, opts.runTimeout, s.sqsProxy.deleted.Load(), len(bodies))
			case <-ctx.Done():
				return o, ctx.Err()
			}
			cpu, ok := proc.cpu()
			cpuKnown = cpuKnown && ok
			proxy := selfCPU()
			var emulatorCPU time.Duration
			if emulator != nil {
				emulatorCPU, _ = emulator.cpu()
			}
			if phase == warm {
				cpuAtWarm, proxyAtWarm, emulatorAtWarm = cpu, proxy, emulatorCPU
				continue
			}
			if cpuKnown {
				o.cpu = cpu - cpuAtWarm
			}
			o.proxyCPU, o.emulatorCPU = proxy-proxyAtWarm, emulatorCPU-emulatorAtWarm
		}
		sqsCounts, warmAt, doneAt := s.sqsProxy.snapshot()
		ddbCounts, _, _ := s.ddbProxy.snapshot()
		proc.stop()
		stopped = true
		o.elapsed, o.sqs, o.ddb = doneAt.Sub(warmAt), sqsCounts, ddbCounts
		return o, nil
	}
	o, err := pass("bench-"+suffix, warmup, env.cpuprofile)
	r.elapsed, r.cpu, r.sqsCalls, r.ddbCalls, r.err = o.elapsed, o.cpu, o.sqs, o.ddb, err
	r.proxyCPU, r.emulatorCPU = o.proxyCPU, o.emulatorCPU
	if r.err == nil && c.idempotent && mode == "noop" {
		dup, err := pass("bench-"+suffix+"-dup", 0, "")
		r.dupDDBCalls = dup.ddb
		if err != nil {
			r.err = fmt.Errorf("duplicate pass: %w", err)
		}
	}
	return r
}

func randomSuffix() string {
	return strconv.FormatUint(rand.Uint64()&0xffffffff, 16)
}

func createTable(ctx context.Context, client *dynamodb.Client, name string) error {
	return provision.CreateNewTable(ctx, client, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
	})
}

// loadQueue creates a queue (visibility timeout 60 s, so nothing is redelivered during
// a run) and sends the bodies with SendMessageBatch from 32 senders, then waits until
// the queue reports them all.
func loadQueue(ctx context.Context, client *sqs.Client, name string, bodies []string) (string, error) {
	output, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String(name),
		Attributes: map[string]string{"VisibilityTimeout": "60"},
	})
	if err != nil {
		return "", err
	}
	url := aws.ToString(output.QueueUrl)
	if err := load.SendBodies(ctx, client, url, bodies, 32); err != nil {
		return url, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		attributes, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
		})
		if err == nil {
			if n, _ := strconv.Atoi(attributes.Attributes["ApproximateNumberOfMessages"]); n >= len(bodies) {
				return url, nil
			}
		}
		if time.Now().After(deadline) {
			return url, fmt.Errorf("queue %s does not report %d messages after a minute", name, len(bodies))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
