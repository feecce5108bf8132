// Command replica is one scheduler replica for the scheduler's process tests: it starts
// a scheduler on the schedules of a definition file, prints a "started" line and then
// each scheduler event as one JSON line on stdout (logs go to stderr), and shuts down
// at SIGTERM or SIGINT.
//
// Usage: replica -schedules FILE -table TABLE -owner NAME [-lease 3s] [-renew 1s] [-missed-after 0]
// AWS settings come from the standard variables (eval "$(localstack/env)").
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/scheduler"
)

// Line is one event as printed; the tests decode it.
type Line struct {
	Kind      string    `json:"kind"`
	Owner     string    `json:"owner"`
	Token     int64     `json:"token"`
	Schedule  string    `json:"schedule,omitempty"`
	TickID    string    `json:"tick_id,omitempty"`
	MessageID string    `json:"message_id,omitempty"`
	Skipped   int64     `json:"skipped,omitempty"`
	Attempt   int       `json:"attempt,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Time      time.Time `json:"time"`
	Err       string    `json:"err,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		os.Exit(1)
	}
}

func run() error {
	file := flag.String("schedules", "", "schedule definition file")
	table := flag.String("table", "", "DynamoDB table")
	owner := flag.String("owner", "", "replica name in the lease")
	lease := flag.Duration("lease", 3*time.Second, "lease duration")
	renew := flag.Duration("renew", time.Second, "renew interval")
	missedAfter := flag.Duration("missed-after", 0, "the grace period (scheduler.Config.MissedAfter; 0: its default)")
	flag.Parse()
	schedules, err := scheduler.ReadSchedules(*file)
	if err != nil {
		return err
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	encoder := json.NewEncoder(os.Stdout)
	observer := scheduler.ObserverFunc(func(_ context.Context, ev scheduler.Event) {
		kind := ev.Kind.String()
		if ev.Kind == 0 {
			kind = "started"
		}
		line := Line{
			Kind: kind, Owner: ev.Owner, Token: ev.Token, Schedule: ev.Schedule,
			TickID: ev.TickID, MessageID: ev.MessageID, Skipped: ev.Skipped, Attempt: ev.Attempt, Reason: ev.Reason, Time: ev.Time,
		}
		if ev.Err != nil {
			line.Err = ev.Err.Error()
		}
		mu.Lock()
		defer mu.Unlock()
		_ = encoder.Encode(line)
	})
	s, err := scheduler.New(sqs.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg), scheduler.Config{
		Table: *table, Owner: *owner, LeaseDuration: *lease, RenewInterval: *renew, MissedAfter: *missedAfter,
		Observer: observer, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}, schedules)
	if err != nil {
		return err
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, os.Interrupt)
	if err := s.Start(ctx); err != nil {
		return err
	}
	observer.ObserveScheduler(ctx, scheduler.Event{Kind: 0, Owner: *owner, Time: time.Now().UTC()}) // the "started" line
	<-signals
	return s.Shutdown(ctx)
}
