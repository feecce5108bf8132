// Command bench runs sqsworker's side-by-side benchmark on the local emulator (make bench):
// the same pre-loaded queue of M messages (BENCH_M, default 5,000) and the same
// concurrency (20) for every contender, in one run:
//
//  1. ceiling: a minimal Go loop (receive 10, handle them, one DeleteMessageBatch);
//  2. poller: the sqsworker poller with the same handler;
//  3. poller_idempotency: the poller with the idempotency middleware (DynamoDB);
//  4. sqs_consumer: the Node.js sqs-consumer, installed into scripts/bench-node;
//  5. lambda_esm: `sqsworker esm` feeding the lambda adapter in Runtime Interface
//     Emulators.
//
// Each runs twice per repeat: with a no-op handler and with a handler that waits
// 10-200 ms (seeded: the same delays, carried in the bodies, for every contender).
// Contenders run one after another, interleaved per repeat (the order rotates), and
// every figure is the median of the repeats (BENCH_REPEATS, default 3).
//
// Every SQS and DynamoDB call goes through one counting reverse proxy per service, the
// same for all contenders. Throughput is M divided by the time from the contender's
// first ReceiveMessage to the moment the proxy saw the M-th message deleted; API calls
// are counted over the same span. A duplicate pass re-sends the keys the idempotency
// contender completed and counts the DynamoDB writes per duplicate.
//
// It prints one line:
//
//	bench: poller_vs_ceiling=X poller_vs_sqs_consumer=X poller_vs_sqs_consumer_slow=X sqs_calls_per_msg=X ddb_writes_per_new=X ddb_writes_per_dup=X
//
// and, with -docs, writes the Markdown report and, with -chart, the PNG chart.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
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
	"github.com/sqsworker/sqsworker/internal/load"
)

type options struct {
	m           int
	concurrency int
	repeats     int
	seed        uint64
	contenders  []string
	modes       []string
	root        string
	docs        string
	chart       string
	cpuprofile  string
	logFile     string
	runTimeout  time.Duration
}

func parseOptions() options {
	envInt := func(name string, fallback int) int {
		if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
			return n
		}
		return fallback
	}
	var opts options
	var contenders, modes string
	var seed int64
	flag.IntVar(&opts.m, "m", envInt("BENCH_M", 5000), "messages per run (env BENCH_M)")
	flag.IntVar(&opts.concurrency, "concurrency", 20, "messages handled at the same time by every contender (a multiple of 10)")
	flag.IntVar(&opts.repeats, "repeats", envInt("BENCH_REPEATS", 3), "repeats of every measurement; the median is reported (env BENCH_REPEATS)")
	flag.Int64Var(&seed, "seed", 1, "seed of the 10-200 ms handler delays")
	flag.StringVar(&contenders, "contenders", envString("BENCH_CONTENDERS", "ceiling,poller,poller_idempotency,sqs_consumer,lambda_esm"), "contenders to run (env BENCH_CONTENDERS)")
	flag.StringVar(&modes, "modes", "noop,slow", "handler modes: noop, slow (10-200 ms)")
	flag.StringVar(&opts.root, "root", "..", "the sqsworker repository root")
	flag.StringVar(&opts.docs, "docs", "", "write the Markdown report here (for example ../docs/benchmarks.md)")
	flag.StringVar(&opts.chart, "chart", "", "write the PNG chart here (for example ../docs/benchmarks.png)")
	flag.StringVar(&opts.cpuprofile, "cpuprofile", "", "write a CPU profile of this process during the poller's no-op runs")
	flag.StringVar(&opts.logFile, "log", "", "append the contenders' logs here (default: a temporary file)")
	flag.DurationVar(&opts.runTimeout, "run-timeout", 5*time.Minute, "give up on one run after this long")
	flag.Parse()
	opts.seed = uint64(seed)
	opts.contenders = strings.Split(contenders, ",")
	opts.modes = strings.Split(modes, ",")
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
	elapsed         time.Duration
	sqsCalls        map[string]int64
	ddbCalls        map[string]int64
	dupDDBCalls     map[string]int64 // the duplicate pass (idempotency contender, no-op mode)
	err             error
}

func (r result) perSecond(m int) float64 {
	if r.err != nil || r.elapsed <= 0 {
		return 0
	}
	return float64(m) / r.elapsed.Seconds()
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
	fmt.Printf("bench: M=%d concurrency=%d repeats=%d contenders=%s modes=%s logs=%s\n",
		opts.m, opts.concurrency, opts.repeats, strings.Join(opts.contenders, ","), strings.Join(opts.modes, ","), s.logPath)
	if err := s.connect(ctx); err != nil {
		return err
	}
	info := machineInfo(ctx, root)
	all, notes, err := s.contenders(opts, root, info)
	if err != nil {
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
func (s *session) connect(ctx context.Context) error {
	direct, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	s.loader = sqs.NewFromConfig(direct)
	s.admin = dynamodb.NewFromConfig(direct)
	if s.sqsProxy, err = startProxy(os.Getenv("AWS_ENDPOINT_URL_SQS")); err != nil {
		return err
	}
	s.cleanups = append(s.cleanups, s.sqsProxy.close)
	if s.ddbProxy, err = startProxy(os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")); err != nil {
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
			all = append(all, ceiling)
		case "poller":
			all = append(all, pollerContender(false))
		case "poller_idempotency":
			all = append(all, pollerContender(true))
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
			path, err := buildLambdaPath(root, binDir, opts.concurrency, s.processEnv, s.logWriter)
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
	return all, notes, nil
}

// measureAll runs every contender in every mode, opts.repeats times, rotating the order.
func (s *session) measureAll(ctx context.Context, opts options, all []contender) ([]result, error) {
	// The same delays for every contender: drawn once, carried in the bodies.
	rng := rand.New(rand.NewPCG(opts.seed, opts.seed+1))
	delays := make([]int, opts.m)
	for i := range delays {
		delays[i] = 10 + rng.IntN(191)
	}
	var profile *os.File
	if opts.cpuprofile != "" {
		var err error
		if profile, err = os.Create(opts.cpuprofile); err != nil {
			return nil, err
		}
		defer profile.Close()
	}
	profiled := false
	var results []result
	for repeat := range opts.repeats {
		for _, mode := range opts.modes {
			order := slices.Clone(all)
			// Rotate the order every repeat, so no contender always runs first or last.
			if len(order) > 0 {
				shift := repeat % len(order)
				order = append(order[shift:], order[:shift]...)
			}
			for _, c := range order {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				env := runEnv{
					concurrency: opts.concurrency, sqs: s.sqsClient, ddb: s.ddbClient,
					sqsEndpoint: s.sqsProxy.URL, env: s.processEnv, logs: s.logWriter,
				}
				bodies := makeBodies(opts.m, mode, delays)
				profileThis := profile != nil && !profiled && c.name == "poller" && mode == "noop"
				r := measure(ctx, opts, c, mode, bodies, env, s.loader, s.admin, s.sqsProxy, s.ddbProxy, profileThis, profile)
				if profileThis {
					profiled = true
				}
				r.repeat = repeat + 1
				results = append(results, r)
				fmt.Printf("bench: repeat %d %-6s %-20s %s\n", repeat+1, mode, c.name, r.status(opts.m, c.idempotent))
			}
		}
	}
	return results, nil
}

// status is one run's progress line.
func (r result) status(m int, idempotent bool) string {
	if r.err != nil {
		return "FAILED: " + r.err.Error()
	}
	status := fmt.Sprintf("%.0f msg/s, %.3f SQS calls/msg", r.perSecond(m), float64(sum(r.sqsCalls))/float64(m))
	if idempotent {
		status += fmt.Sprintf(", %.2f DynamoDB writes/msg", float64(ddbWrites(r.ddbCalls))/float64(m))
		if r.dupDDBCalls != nil {
			status += fmt.Sprintf(", %.2f per duplicate", float64(ddbWrites(r.dupDDBCalls))/float64(m))
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
		if err := os.WriteFile(opts.docs, []byte(summary.markdown(opts)), 0o644); err != nil {
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

// measure loads a fresh queue, runs the contender until the proxy saw every message
// deleted, and for the idempotency contender in no-op mode runs the duplicate pass.
func measure(ctx context.Context, opts options, c contender, mode string, bodies []string, env runEnv,
	loader *sqs.Client, admin *dynamodb.Client, sqsProxy, ddbProxy *countingProxy, profileThis bool, profile *os.File) result {
	r := result{contender: c.name, mode: mode}
	suffix := randomSuffix()
	if c.idempotent {
		env.table = "bench-" + suffix
		if r.err = createTable(ctx, admin, env.table); r.err != nil {
			return r
		}
		defer func() {
			_, _ = admin.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(env.table)})
		}()
	}
	pass := func(name string) (time.Duration, map[string]int64, map[string]int64, error) {
		queueURL, err := loadQueue(ctx, loader, name, bodies)
		if queueURL != "" {
			defer func() {
				_, _ = loader.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(queueURL)})
			}()
		}
		if err != nil {
			return 0, nil, nil, err
		}
		env.queueURL = queueURL
		done := sqsProxy.arm(int64(len(bodies)))
		ddbProxy.arm(0)
		defer sqsProxy.disarm()
		defer ddbProxy.disarm()
		if profileThis {
			_ = pprof.StartCPUProfile(profile)
		}
		stop, err := c.start(ctx, env)
		if err != nil {
			if profileThis {
				pprof.StopCPUProfile()
			}
			return 0, nil, nil, err
		}
		select {
		case <-done:
		case <-time.After(opts.runTimeout):
			err = fmt.Errorf("%w after %s with %d of %d messages deleted", errTimeout, opts.runTimeout, sqsProxy.deleted.Load(), len(bodies))
		case <-ctx.Done():
			err = ctx.Err()
		}
		if profileThis {
			pprof.StopCPUProfile()
		}
		sqsCounts, first, doneAt := sqsProxy.snapshot()
		ddbCounts, _, _ := ddbProxy.snapshot()
		stop()
		if err != nil {
			return 0, sqsCounts, ddbCounts, err
		}
		return doneAt.Sub(first), sqsCounts, ddbCounts, nil
	}
	r.elapsed, r.sqsCalls, r.ddbCalls, r.err = pass("bench-" + suffix)
	if r.err == nil && c.idempotent && mode == "noop" {
		var err error
		_, _, r.dupDDBCalls, err = pass("bench-" + suffix + "-dup")
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
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
	})
	if err != nil {
		return err
	}
	return dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute)
}

// loadQueue creates a queue (visibility timeout 60 s, so nothing is redelivered during
// a run) and sends the bodies with SendMessageBatch from eight senders, then waits until
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
	if err := load.SendBodies(ctx, client, url, bodies, 8); err != nil {
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
