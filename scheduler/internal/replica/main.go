// Command replica is one scheduler replica for the scheduler's process tests: it runs
// scheduler.Run on the schedules of a definition file and prints each scheduler event as
// one JSON line on stdout (logs go to stderr).
//
// Usage: replica -schedules FILE -table TABLE -owner NAME [-lease 3s] [-renew 1s] [-missed-after 1s]
// AWS settings come from the standard variables (eval "$(localstack/env)").
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
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
	Skipped   int       `json:"skipped,omitempty"`
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
	missedAfter := flag.Duration("missed-after", time.Second, "how late a tick counts as missed")
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
		line := Line{
			Kind: ev.Kind.String(), Owner: ev.Owner, Token: ev.Token, Schedule: ev.Schedule,
			TickID: ev.TickID, MessageID: ev.MessageID, Skipped: ev.Skipped, Reason: ev.Reason, Time: ev.Time,
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
	return s.Run(ctx)
}
