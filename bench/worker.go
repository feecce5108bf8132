package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// The Go contenders (ceiling, poller, poller_idempotency) run in a process of their own,
// like the peers, so each one's CPU time is its own and not the proxy's: the bench starts
// itself again as `bench -worker NAME` with this environment, and stops it with SIGTERM.
const (
	envQueueURL    = "BENCH_QUEUE_URL"
	envTable       = "BENCH_TABLE"
	envConcurrency = "BENCH_CONCURRENCY"
	envCPUProfile  = "BENCH_CPUPROFILE" // write a CPU profile of the worker here
	envMode        = "BENCH_MODE"       // the bench mode, noop or slow
)

// goWorkers are the in-process Go contenders, by name.
var goWorkers = map[string]func(ctx context.Context, env runEnv) (stop func(), err error){
	"ceiling":            runCeiling,
	"poller":             pollerWorker(false),
	"poller_idempotency": pollerWorker(true),
}

// runWorker is the child process: it runs the contender name on the queue of its
// environment until SIGTERM or SIGINT. Its SQS and DynamoDB clients find the counting
// proxies through AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL_DYNAMODB.
func runWorker(name string) error {
	start, ok := goWorkers[name]
	if !ok {
		return fmt.Errorf("unknown worker %q", name)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	concurrency, err := strconv.Atoi(os.Getenv(envConcurrency))
	if err != nil {
		return fmt.Errorf("%s: %w", envConcurrency, err)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	if path := os.Getenv(envCPUProfile); path != "" {
		profile, err := os.Create(path)
		if err != nil {
			return err
		}
		defer profile.Close()
		if err := pprof.StartCPUProfile(profile); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var starts *startLog
	if os.Getenv(envMode) == "arrival" {
		starts = &startLog{}
	}
	env := runEnv{
		starts:      starts,
		queueURL:    os.Getenv(envQueueURL),
		table:       os.Getenv(envTable),
		concurrency: concurrency,
		mode:        os.Getenv(envMode),
		sqs:         sqs.NewFromConfig(cfg),
		ddb:         dynamodb.NewFromConfig(cfg),
		logs:        os.Stderr,
	}
	// The contender keeps running after the signal until it is stopped here.
	stopContender, err := start(context.WithoutCancel(ctx), env)
	if err != nil {
		return err
	}
	<-ctx.Done()
	stopContender()
	if starts != nil {
		return starts.write(os.Getenv(envStartsFile))
	}
	return nil
}
