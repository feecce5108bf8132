package redrive_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/redrive"
)

// A native move task started with no destination brings every dead-lettered message
// back to the queue it failed in, and empties the dead-letter queue.
func TestMoveTaskRedrivesToSource(t *testing.T) {
	t.Parallel()
	ctx := waitContext(t)
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 1})
	bodies := deadLetterThroughReceives(t, client, queue, "m", 25)

	task, err := redrive.StartMoveTask(ctx, client, queue.DeadLetterQueueURL, redrive.MoveTaskOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if task.Handle == "" || task.SourceARN != queue.DeadLetterQueueARN {
		t.Fatalf("started task = %+v, want a handle and source %s", task, queue.DeadLetterQueueARN)
	}
	var seen []redrive.MoveTask
	final, err := redrive.WaitMoveTask(ctx, client, task, 100*time.Millisecond, func(task redrive.MoveTask) { seen = append(seen, task) })
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != redrive.MoveTaskCompleted || final.Moved != 25 {
		t.Fatalf("final task = %+v, want COMPLETED with 25 moved", final)
	}
	t.Run("to move taken at the start", func(t *testing.T) {
		testenv.SkipOn(t, testenv.ElasticMQMoveTaskToMoveCountsDown)
		if final.ToMove != 25 {
			t.Errorf("final task = %+v, want 25 to move", final)
		}
	})
	if len(seen) == 0 {
		t.Fatal("progress was never reported")
	}

	counts := countIDs(t, drain(t, client, queue.URL, len(bodies)))
	if len(counts) != len(bodies) {
		t.Fatalf("source queue holds %d distinct messages, want %d", len(counts), len(bodies))
	}
	for _, text := range bodies {
		if id := idOf(t, text); counts[id] != 1 {
			t.Fatalf("message %s is in the source queue %d times, want 1", id, counts[id])
		}
	}
	assertEmpty(t, client, queue.DeadLetterQueueURL)

	tasks, err := redrive.ListMoveTasks(ctx, client, queue.DeadLetterQueueURL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0].Status != redrive.MoveTaskCompleted {
		t.Fatalf("listed tasks = %+v, want the one completed task", tasks)
	}
}

// Cancel stops a running task; while it runs, a second task on the same queue is
// refused with an explanation of the one-active-task rule.
func TestMoveTaskCancel(t *testing.T) {
	t.Parallel()
	ctx := waitContext(t)
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 1})
	deadLetterThroughReceives(t, client, queue, "c", 25)

	task, err := redrive.StartMoveTask(ctx, client, queue.DeadLetterQueueURL, redrive.MoveTaskOptions{Destination: queue.URL, RatePerSecond: 1})
	if err != nil {
		t.Fatal(err)
	}

	_, err = redrive.StartMoveTask(ctx, client, queue.DeadLetterQueueURL, redrive.MoveTaskOptions{})
	var active *redrive.ActiveTaskError
	if !errors.Is(err, redrive.ErrMoveTaskActive) || !errors.As(err, &active) {
		t.Fatalf("second start: err = %v, want an ActiveTaskError", err)
	}
	if active.Task.Status != redrive.MoveTaskRunning {
		t.Fatalf("blocking task status = %s, want RUNNING", active.Task.Status)
	}
	t.Logf("second start refused: %v", err)

	testenv.Eventually(t, 10*time.Second, "a first message moved", func() bool {
		tasks, err := redrive.ListMoveTasks(ctx, client, queue.DeadLetterQueueURL, 1)
		return err == nil && len(tasks) == 1 && tasks[0].Moved >= 1
	})
	cancelled, err := redrive.CancelActiveMoveTask(ctx, client, queue.DeadLetterQueueURL)
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.Handle != task.Handle {
		t.Fatalf("cancelled task %s, want %s", cancelled.Handle, task.Handle)
	}
	final, err := redrive.WaitMoveTask(ctx, client, task, 100*time.Millisecond, nil)
	if testenv.SQSEmulator() == testenv.ElasticMQ && errors.Is(err, redrive.ErrMoveTaskNotListed) {
		// The cancelled task is gone from the list; its moved count is the cancel's answer.
		t.Logf("wait after cancel: %v", err)
		final, err = cancelled, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Run("listed as CANCELLED", func(t *testing.T) {
		testenv.SkipOn(t, testenv.ElasticMQForgetsCancelledMoveTasks)
		if final.Status != redrive.MoveTaskCancelled {
			t.Errorf("final status = %s, want CANCELLED", final.Status)
		}
	})
	if final.Moved < 1 || final.Moved >= 25 {
		t.Fatalf("cancelled task moved %d messages, want between 1 and 24", final.Moved)
	}
	sourceVisible, sourceInFlight := testenv.Counts(t, client, queue.URL)
	dlqVisible, dlqInFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL)
	if int64(sourceVisible+sourceInFlight) != final.Moved || sourceVisible+sourceInFlight+dlqVisible+dlqInFlight != 25 {
		t.Fatalf("after cancel: source %d+%d, DLQ %d+%d, moved %d; want source = moved and 25 in all",
			sourceVisible, sourceInFlight, dlqVisible, dlqInFlight, final.Moved)
	}
	if _, err := redrive.CancelActiveMoveTask(ctx, client, queue.DeadLetterQueueURL); !errors.Is(err, redrive.ErrNoActiveMoveTask) {
		t.Fatalf("cancel with no running task: err = %v, want ErrNoActiveMoveTask", err)
	}
}

func TestStartMoveTaskErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	tests := []struct {
		name    string
		source  string
		options redrive.MoveTaskOptions
		want    error
	}{
		{name: "unknown queue", source: "no-such-queue-" + testenv.UniqueName(t), want: redrive.ErrQueueNotFound},
		{name: "rate above 500", source: "any", options: redrive.MoveTaskOptions{RatePerSecond: 501}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := redrive.StartMoveTask(ctx, client, tc.source, tc.options)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// waitContext bounds a test's waits for move tasks, so a task that never ends fails the
// test with what it was waiting for instead of hanging until the package timeout.
func waitContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}
