package saga_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/examples/saga"
	"github.com/sqsworker/sqsworker/internal/testing/sfntest"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/tasktoken"
)

// The saga on the local services: the execution's final state and every effect, for the
// happy path and a failure at each step.
func TestSagaRunsAndCompensatesOnEmulator(t *testing.T) {
	states := sfntest.Require(t)
	queues := testenv.SQS(t)
	queue := testenv.NewQueue(t, queues, testenv.QueueOptions{MaxReceiveCount: 5})
	machine := sfntest.NewStateMachine(t, states, saga.Definition(sfntest.Target(t, queue)))
	ledger := saga.NewLedger()
	answer, err := tasktoken.New(tasktoken.Config{API: states, Token: tasktoken.BodyField("taskToken"), Queues: queues})
	if err != nil {
		t.Fatal(err)
	}
	server, err := poller.New(queues, poller.Config{QueueURL: queue.URL, WaitTime: time.Second}, sqsworker.Chain(saga.Handler(ledger), answer))
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	})

	cases := []struct {
		fail    string
		status  sfntypes.ExecutionStatus
		effects []string
	}{
		{"", sfntypes.ExecutionStatusSucceeded, []string{"charge", "reserve", "ship"}},
		{"charge", sfntypes.ExecutionStatusFailed, nil},
		{"reserve", sfntypes.ExecutionStatusFailed, []string{"charge", "refund"}},
		{"ship", sfntypes.ExecutionStatusFailed, []string{"charge", "reserve", "release", "refund"}},
	}
	for _, tc := range cases {
		t.Run("fail="+tc.fail, func(t *testing.T) {
			order := "order-" + tc.fail
			before := len(ledger.Effects())
			execution := sfntest.Start(t, states, machine, map[string]string{"order": order, "fail": tc.fail})
			done := sfntest.Finished(t, states, execution, 60*time.Second)
			if done.Status != tc.status {
				t.Fatalf("execution %s (error %q, cause %q), want %s", done.Status, aws.ToString(done.Error), aws.ToString(done.Cause), tc.status)
			}
			if tc.status == sfntypes.ExecutionStatusFailed && aws.ToString(done.Error) != "OrderFailed" {
				t.Fatalf("execution error %q, want OrderFailed", aws.ToString(done.Error))
			}
			var want []string
			for _, effect := range tc.effects {
				want = append(want, effect+" "+order)
			}
			if got := ledger.Effects()[before:]; !slices.Equal(got, want) {
				t.Fatalf("effects %v, want %v", got, want)
			}
		})
	}
	testenv.WaitQueueEmpty(t, queues, queue.URL, 30*time.Second)
}
