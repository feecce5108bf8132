package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// runEnv is what a contender gets for one run.
type runEnv struct {
	queueURL    string
	table       string
	concurrency int
	mode        string           // "noop", "slow" or "arrival" (the latency runs: no-op handlers)
	starts      *startLog        // a Go worker notes its handler starts here (mode "arrival")
	sqs         *sqs.Client      // through the counting proxy
	ddb         *dynamodb.Client // through the counting proxy
	sqsEndpoint string           // the proxy's URL, for processes
	env         []string         // environment for processes (AWS settings)
	logs        io.Writer        // where processes write
	cpuprofile  string           // a Go worker writes its CPU profile here
}

// contender is one runtime under test. start begins consuming env.queueURL in a process
// of its own and returns it.
type contender struct {
	name       string
	label      string // for tables and the chart
	idempotent bool   // needs a table
	// concurrency overrides the bench's concurrency (the max-rate runs); 0 keeps it.
	concurrency int
	// noopOnly: run in the no-op mode only.
	noopOnly bool
	// noCPU: the process's CPU time is not the contender's (the Lambda path's handlers
	// run in other processes).
	noCPU bool
	// notesStarts: in the latency runs the contender notes its handler starts and
	// writes them at exit to the file in BENCH_STARTS_FILE (arrival.go's startLine
	// shape). The lambda_esm path reports them through the lambdatest bootstrap's
	// LAMBDATEST_LOG instead.
	notesStarts bool

	start func(ctx context.Context, env runEnv) (*process, error)
}

// goContender runs the Go worker (ceiling, poller, poller_idempotency) in a child
// process, this program again with -worker, as the contender name.
func goContender(name, worker, label string, idempotent bool) contender {
	return contender{name: name, label: label, idempotent: idempotent, notesStarts: true,
		start: func(ctx context.Context, env runEnv) (*process, error) {
			self, err := os.Executable()
			if err != nil {
				return nil, err
			}
			vars := append(env.env, envQueueURL+"="+env.queueURL, envTable+"="+env.table,
				envConcurrency+"="+strconv.Itoa(env.concurrency), envMode+"="+env.mode)
			if env.cpuprofile != "" {
				vars = append(vars, envCPUProfile+"="+env.cpuprofile)
			}
			return startProcess(self, []string{"-worker", worker}, "", vars, env.logs)
		}}
}

// job is the work every contender does per message: parse the body and wait sleep_ms.
func job(ctx context.Context, body string) error {
	var j struct {
		SleepMS int `json:"sleep_ms"`
	}
	if err := json.Unmarshal([]byte(body), &j); err != nil {
		return err
	}
	if j.SleepMS > 0 {
		timer := time.NewTimer(time.Duration(j.SleepMS) * time.Millisecond)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// runCeiling is the minimal loop: concurrency/10 loops, each receiving 10, handling them
// in parallel, and deleting them with one DeleteMessageBatch that it does not wait for
// (so with network latency its next receive overlaps the delete, as the poller's do).
func runCeiling(ctx context.Context, env runEnv) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	var loops, deletes sync.WaitGroup
	for range max(env.concurrency/10, 1) {
		loops.Go(func() {
			for ctx.Err() == nil {
				output, err := env.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
					QueueUrl:            aws.String(env.queueURL),
					MaxNumberOfMessages: sqsinfo.MaxBatchEntries,
					WaitTimeSeconds:     sqsx.WaitSeconds(sqsinfo.MaxWaitTime),
				})
				if err != nil || len(output.Messages) == 0 {
					continue
				}
				handles := make([]string, len(output.Messages))
				var batch sync.WaitGroup
				for i, message := range output.Messages {
					handles[i] = aws.ToString(message.ReceiptHandle)
					batch.Go(func() {
						if env.starts != nil {
							env.starts.record(aws.ToString(message.Body))
						}
						_ = job(ctx, aws.ToString(message.Body))
					})
				}
				batch.Wait()
				deletes.Go(func() { _ = sqsx.DeleteMessages(ctx, env.sqs, env.queueURL, handles) })
			}
		})
	}
	return func() { cancel(); loops.Wait(); deletes.Wait() }, nil
}

// pollerWorker runs the sqsworker poller, with the idempotency middleware when
// idempotent.
func pollerWorker(idempotent bool) func(ctx context.Context, env runEnv) (func(), error) {
	return func(ctx context.Context, env runEnv) (func(), error) {
		var handler sqsworker.Handler = sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
			if env.starts != nil {
				env.starts.record(m.Body)
			}
			return job(ctx, m.Body)
		})
		if idempotent {
			store := idempotency.NewDynamoDBStore(env.ddb, env.table)
			handler = idempotency.Middleware(store, idempotency.Config{KeyFunc: idempotency.KeyFromJSONField("key")})(handler)
		}
		server, err := poller.New(env.sqs, poller.Config{
			QueueURL:              env.queueURL,
			Concurrency:           env.concurrency,
			Prefetch:              pollerPrefetch(env.mode, idempotent),
			AllowUnboundedRetries: true,
			Logger:                slog.New(slog.NewTextHandler(env.logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		}, handler)
		if err != nil {
			return nil, err
		}
		if err := server.Start(ctx); err != nil {
			return nil, err
		}
		return func() {
			// An ended context cuts the drain short: the idle long poll is abandoned at
			// once instead of running out its 20 s.
			ended, cancel := context.WithCancel(context.Background())
			cancel()
			_ = server.Shutdown(ended)
		}, nil
	}
}

func sqsConsumerContender(nodeDir string) contender {
	return contender{
		name:        "sqs_consumer",
		label:       "sqs-consumer (Node.js)",
		notesStarts: true, // consumer.mjs, with BENCH_STARTS_FILE
		start: func(ctx context.Context, env runEnv) (*process, error) {
			return startProcess("node", []string{"consumer.mjs"}, nodeDir, append(env.env,
				"BENCH_QUEUE_URL="+env.queueURL,
				"BENCH_ENDPOINT="+env.sqsEndpoint,
				"BENCH_INSTANCES="+strconv.Itoa(max(env.concurrency/10, 1)),
				"BENCH_BATCH_SIZE=10",
			), env.logs)
		},
	}
}

// ensureNode installs scripts/bench-node with npm ci (from the committed lock file)
// unless it is installed, and returns the versions of node, sqs-consumer and the SDK.
func ensureNode(nodeDir string, logs io.Writer) (map[string]string, error) {
	if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "sqs-consumer", "package.json")); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = nodeDir
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("npm ci in %s: %w", nodeDir, err)
		}
	}
	versions := map[string]string{}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	versions["node"] = strings.TrimSpace(string(out))
	for _, pkg := range []string{"sqs-consumer", "@aws-sdk/client-sqs"} {
		data, err := os.ReadFile(filepath.Join(nodeDir, "node_modules", pkg, "package.json"))
		if err != nil {
			return nil, err
		}
		var manifest struct{ Version string }
		_ = json.Unmarshal(data, &manifest)
		versions[pkg] = manifest.Version
	}
	return versions, nil
}

// lambdaPath is the Lambda contender: `sqsworker esm` (lambda/localesm) invoking the
// examples/lambdatest bootstrap (lambda.NewBatchHandler) in Runtime Interface
// Emulators (the pinned aws-lambda-rie), one per execution environment:
// concurrency/10 environments with batch size 10, the adapter running 10 records at a
// time. The emulators start once and are warmed, so runs measure warm invocations.
type lambdaPath struct {
	cli       string
	functions []string
	stops     []func()
}

func buildLambdaPath(root, binDir string, concurrency int, env []string, logs io.Writer) (*lambdaPath, error) {
	goBinary := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBinary); err != nil {
		goBinary = "go"
	}
	build := func(extraEnv []string, args ...string) error {
		cmd := exec.Command(goBinary, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), extraEnv...)
		cmd.Stdout, cmd.Stderr = logs, logs
		return cmd.Run()
	}
	l := &lambdaPath{cli: filepath.Join(binDir, "sqsworker")}
	if err := build(nil, "build", "-o", l.cli, "./cmd/sqsworker"); err != nil {
		return nil, fmt.Errorf("building cmd/sqsworker: %w", err)
	}
	if out, err := exec.Command(l.cli, "esm", "--help").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("`sqsworker esm` is missing: %v: %s", err, out)
	}
	rie := filepath.Join(binDir, "aws-lambda-rie")
	if err := build(nil, "build", "-o", rie, "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"); err != nil {
		return nil, fmt.Errorf("building aws-lambda-rie: %w", err)
	}
	bootstrap := filepath.Join(binDir, "lambdatest", "bootstrap")
	if err := build([]string{"GOOS=linux", "GOARCH=" + runtime.GOARCH, "CGO_ENABLED=0"},
		"build", "-tags", "lambda.norpc", "-o", bootstrap, "./examples/lambdatest"); err != nil {
		return nil, fmt.Errorf("building the lambdatest bootstrap: %w", err)
	}
	for range max(concurrency/10, 1) {
		invoke, runtimeAPI := freeAddress(), freeAddress()
		stop, err := startProcess(rie, []string{"--runtime-interface-emulator-address", invoke, "--runtime-api-address", runtimeAPI, bootstrap},
			filepath.Dir(bootstrap), append(env,
				"AWS_LAMBDA_FUNCTION_TIMEOUT=60", "AWS_LAMBDA_FUNCTION_NAME=bench", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1024",
				"LAMBDATEST_CONCURRENCY=10"), logs)
		if err != nil {
			l.close()
			return nil, err
		}
		l.stops = append(l.stops, stop.stop)
		url := "http://" + invoke + "/2015-03-31/functions/function/invocations"
		l.functions = append(l.functions, url)
		if err := warm(url); err != nil {
			l.close()
			return nil, err
		}
	}
	return l, nil
}

// warm waits for an emulator to listen and invokes it once with an empty event (its
// cold start).
func warm(url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		response, err := http.Post(url, "application/json", strings.NewReader(`{"Records":[]}`))
		if err == nil {
			_, _ = io.Copy(io.Discard, response.Body)
			response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lambda emulator %s not ready: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (l *lambdaPath) close() {
	for _, stop := range l.stops {
		stop()
	}
}

func (l *lambdaPath) contender() contender {
	return contender{
		name:  "lambda_esm",
		label: "Lambda adapter (esm + RIE)",
		noCPU: true,
		start: func(ctx context.Context, env runEnv) (*process, error) {
			args := []string{"esm", env.queueURL, "--batch-size", "10", "--maximum-concurrency", strconv.Itoa(len(l.functions))}
			for _, url := range l.functions {
				args = append(args, "--function-url", url)
			}
			return startProcess(l.cli, args, "", env.env, env.logs)
		},
	}
}

func freeAddress() string {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer listener.Close()
	return listener.Addr().String()
}

var errTimeout = errors.New("timed out")

// pollerPrefetch is the poller's Config.Prefetch in mode, as its docs advise a user:
// 10 for slow handlers and for handlers behind the idempotency middleware (two
// DynamoDB writes a job make even a no-op handler slow), off otherwise;
// BENCH_POLLER_PREFETCH overrides it.
func pollerPrefetch(mode string, idempotent bool) int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_POLLER_PREFETCH")); err == nil {
		return n
	}
	if mode == "slow" || idempotent {
		return 10
	}
	return 0
}
