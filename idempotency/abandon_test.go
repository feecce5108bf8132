package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// TestAbandonedHandlersCostOnlyTheirOwnGoroutine (moto, real time): ten handlers that
// ignore their context, each under a claim. Their lease heartbeats kept ticking after
// the host gave them up (context cancelled) and after their lease reached its deadline,
// one goroutine each beside the handler's own. Now a heartbeat ends once its lease can no
// longer be renewed: the goroutines fall to the baseline plus the ten handlers'. When a
// renewal finds the lease lost, it ends too (and cancels the handler's context).
//
// Not parallel: it counts the process's goroutines (the SDK's idle connections are
// closed before each count).
func TestAbandonedHandlersCostOnlyTheirOwnGoroutine(t *testing.T) {
	dynamo := testenv.DynamoDB(t)
	name := testenv.NewTable(t, dynamo)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	client := dynamodb.New(dynamo.Options(), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: transport} })
	store := idempotency.NewDynamoDBStore(client, name)
	goroutines := func() int {
		transport.CloseIdleConnections()
		return runtime.NumGoroutine()
	}
	const handlers = 10
	for _, c := range []struct {
		name string
		// context returns the context each run gets and what makes its lease unrenewable.
		context func(t *testing.T) (context.Context, func())
		// abandon, if not nil, is called once every run has started.
		abandon func(t *testing.T, keys []string)
	}{
		{
			name: "context cancelled",
			context: func(t *testing.T) (context.Context, func()) {
				return context.WithCancel(context.Background())
			},
		},
		{
			name: "lease at its deadline",
			context: func(t *testing.T) (context.Context, func()) {
				// Never cancelled: only the lease's deadline stops its renewals.
				return deadlineContext{Context: context.Background(), deadline: time.Now().Add(time.Second)}, func() {}
			},
		},
		{
			name:    "lease lost",
			context: func(t *testing.T) (context.Context, func()) { return context.Background(), func() {} },
			abandon: func(t *testing.T, keys []string) {
				for _, key := range keys { // an operator releases the keys
					record, err := store.Get(t.Context(), key)
					if err != nil {
						t.Fatal(err)
					}
					if err := store.Delete(t.Context(), key, record.Lease); err != nil {
						t.Fatal(err)
					}
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			baseline := goroutines()
			started, release := make(chan struct{}, handlers), make(chan struct{})
			handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
				started <- struct{}{}
				<-release // ignores its context
				return nil
			}), idempotency.Middleware(store, idempotency.Config{
				KeyFunc: idempotency.KeyFromJSONField("id"), InProgressTTL: 300 * time.Millisecond, MinRemaining: 100 * time.Millisecond,
			}))
			var runs sync.WaitGroup
			var releaseOnce sync.Once
			t.Cleanup(func() { // also when the test fails: no run outlives it
				releaseOnce.Do(func() { close(release) })
				runs.Wait()
			})
			var cancels []func()
			keys := make([]string, handlers)
			for i := range handlers {
				ctx, cancel := c.context(t)
				cancels = append(cancels, cancel)
				id := fmt.Sprintf("%s-%d", t.Name(), i)
				keys[i] = stored(id)
				runs.Go(func() { _ = handler.Handle(ctx, jsonMessage(id, map[string]any{"id": id})) })
			}
			for range handlers {
				testenv.Recv(t, started, testenv.WaitTimeout, "a handler started")
			}
			if c.abandon != nil {
				c.abandon(t, keys)
			}
			for _, cancel := range cancels {
				cancel()
			}
			testenv.Eventually(t, 30*time.Second, fmt.Sprintf("at most %d goroutines above the baseline (the handlers')", handlers), func() bool {
				return goroutines() <= baseline+handlers
			})
			releaseOnce.Do(func() { close(release) })
			runs.Wait()
			testenv.Eventually(t, 30*time.Second, "back to the baseline once the handlers return", func() bool {
				return goroutines() <= baseline
			})
		})
	}
}
