package redrive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// MaxMoveRate is the highest rate, in messages per second, that StartMessageMoveTask
// accepts (MaxNumberOfMessagesPerSecond).
const MaxMoveRate = 500

// maxListedMoveTasks is the most tasks ListMessageMoveTasks returns.
const maxListedMoveTasks = sqsinfo.MaxListedMoveTasks

// MoveTaskStatus is the status of a native message move task.
type MoveTaskStatus string

// The statuses ListMessageMoveTasks reports.
const (
	MoveTaskRunning    MoveTaskStatus = "RUNNING"
	MoveTaskCompleted  MoveTaskStatus = "COMPLETED"
	MoveTaskCancelling MoveTaskStatus = "CANCELLING"
	MoveTaskCancelled  MoveTaskStatus = "CANCELLED"
	MoveTaskFailed     MoveTaskStatus = "FAILED"
)

// Active reports whether a task in this status blocks a new task on the same source
// queue (RUNNING or CANCELLING).
func (s MoveTaskStatus) Active() bool { return s == MoveTaskRunning || s == MoveTaskCancelling }

// Done reports whether the task has ended (COMPLETED, CANCELLED or FAILED).
func (s MoveTaskStatus) Done() bool {
	return s == MoveTaskCompleted || s == MoveTaskCancelled || s == MoveTaskFailed
}

// MoveTask is a native SQS message move task (StartMessageMoveTask), as
// ListMessageMoveTasks reports it.
type MoveTask struct {
	// Handle identifies the task for CancelMessageMoveTask. SQS lists it only while the
	// task is RUNNING; StartMoveTask always sets it.
	Handle string `json:"handle,omitempty"`
	// Status is RUNNING, COMPLETED, CANCELLING, CANCELLED or FAILED.
	Status MoveTaskStatus `json:"status"`
	// SourceARN is the ARN of the dead-letter queue the messages move out of.
	SourceARN string `json:"source_arn"`
	// DestinationARN is the ARN of the destination queue, or "" when the messages go
	// back to the queues they were dead-lettered from.
	DestinationARN string `json:"destination_arn,omitempty"`
	// RatePerSecond is the requested rate in messages per second, or 0 when SQS chooses
	// it from the backlog.
	RatePerSecond int `json:"rate_per_second,omitempty"`
	// Moved is the approximate number of messages moved so far.
	Moved int64 `json:"moved"`
	// ToMove is the approximate number of messages to move, taken when the task started;
	// 0 until SQS reports it.
	ToMove int64 `json:"to_move"`
	// StartedAt is when the task started (zero until SQS reports it).
	StartedAt time.Time `json:"started_at"`
	// FailureReason says why a FAILED task failed.
	FailureReason string `json:"failure_reason,omitempty"`
}

// MoveTaskOptions are the optional parameters of [StartMoveTask].
type MoveTaskOptions struct {
	// Destination names the queue to move the messages to (name, URL or ARN); if empty,
	// each message goes back to the queue it was dead-lettered from.
	Destination string
	// RatePerSecond specifies the movement rate in messages per second, 1 to
	// [MaxMoveRate]; if zero, SQS chooses the rate from the backlog.
	RatePerSecond int
}

// ErrMoveTaskActive matches (with errors.Is) the [*ActiveTaskError] StartMoveTask
// returns when the source queue already has an active move task.
var ErrMoveTaskActive = errors.New("redrive: a message move task is already active on this queue")

// ErrNoActiveMoveTask is returned by [CancelActiveMoveTask] when the queue has no
// running move task.
var ErrNoActiveMoveTask = errors.New("redrive: no running message move task on this queue")

// ActiveTaskError explains SQS's rule that a source queue has at most one active
// (RUNNING or CANCELLING) message move task at a time.
type ActiveTaskError struct {
	// SourceARN is the queue the new task was to start on.
	SourceARN string
	// Task is the active task, as listed.
	Task MoveTask
	// Err is SQS's error for the StartMessageMoveTask call.
	Err error
}

// Error explains the rule, the blocking task and what to do.
func (e *ActiveTaskError) Error() string {
	return fmt.Sprintf("redrive: cannot start a message move task on %s: SQS allows only one active move task per source queue, "+
		"and a task started %s is %s (moved %d of %d); wait for it to end or cancel it (CancelMessageMoveTask, `sqsworker redrive cancel`), "+
		"then start again: %v",
		e.SourceARN, e.Task.StartedAt.UTC().Format(time.RFC3339), e.Task.Status, e.Task.Moved, e.Task.ToMove, e.Err)
}

// Unwrap returns SQS's error.
func (e *ActiveTaskError) Unwrap() error { return e.Err }

// Is reports true for [ErrMoveTaskActive].
func (e *ActiveTaskError) Is(target error) bool { return target == ErrMoveTaskActive }

// StartMoveTask starts a native message move task (StartMessageMoveTask) out of the
// dead-letter queue source (name, URL or ARN), back to the original source queues or to
// options.Destination. SQS moves the messages asynchronously; follow the task with
// [WaitMoveTask] or [ListMoveTasks].
//
// SQS accepts only a queue that is the dead-letter queue of another SQS queue as source,
// and only one active task per source queue: that case returns an [*ActiveTaskError]
// (errors.Is(err, ErrMoveTaskActive)). A missing queue matches [ErrQueueNotFound].
//
// Without a destination, each message goes back to its DeadLetterQueueSourceArn, which
// SQS sets only on messages its redrive policy moved. Messages a host sent to the
// dead-letter queue itself (a permanent failure's copy) lack it: give a Destination
// (LocalStack 4.14 fails such a task with FailureReason "AttributeError"; [MoveTask.Err]
// explains it).
//
// Beside a worker that still fails the job, the moved messages come back to the
// dead-letter queue during the task. AWS documents that the task's number of messages
// to move is taken when it starts (ListMessageMoveTasks,
// ApproximateNumberOfMessagesToMove), not whether it also moves what arrives later;
// LocalStack 4.14 and ElasticMQ 1.7.1 move as many as the queue held at the start and
// stop, leaving the returns. [Mover] leaves them by design.
//
// FIFO: AWS replaces a message's deduplication id with its message id when the redrive
// policy moves it to a FIFO dead-letter queue, so the native redrive is not deduplicated
// against the original send; the message is appended to its group (order changes).
// LocalStack 4.14 keeps the original id, and a native move inside the 5-minute window
// reports the message moved while the destination silently drops it. [Mover] sends
// FIFO messages with a new deduplication id ([NextDeduplicationID]) instead.
func StartMoveTask(ctx context.Context, api MoveTaskAPI, source string, options MoveTaskOptions) (*MoveTask, error) {
	if options.RatePerSecond < 0 || options.RatePerSecond > MaxMoveRate {
		return nil, fmt.Errorf("redrive: rate %d messages per second is outside 1 to %d", options.RatePerSecond, MaxMoveRate)
	}
	sourceARN, err := resolveARN(ctx, api, source)
	if err != nil {
		return nil, err
	}
	input := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(sourceARN)}
	task := &MoveTask{Status: MoveTaskRunning, SourceARN: sourceARN, RatePerSecond: options.RatePerSecond}
	if options.Destination != "" {
		if task.DestinationARN, err = resolveARN(ctx, api, options.Destination); err != nil {
			return nil, err
		}
		input.DestinationArn = aws.String(task.DestinationARN)
	}
	if options.RatePerSecond > 0 {
		input.MaxNumberOfMessagesPerSecond = aws.Int32(int32(options.RatePerSecond))
	}
	output, err := api.StartMessageMoveTask(ctx, input)
	if err != nil {
		if tasks, listErr := listMoveTasks(ctx, api, sourceARN, 1); listErr == nil && len(tasks) > 0 && tasks[0].Status.Active() {
			return nil, &ActiveTaskError{SourceARN: sourceARN, Task: tasks[0], Err: err}
		}
		return nil, fmt.Errorf("redrive: starting a message move task on %s: %w", sourceARN, err)
	}
	task.Handle = aws.ToString(output.TaskHandle)
	return task, nil
}

// ListMoveTasks returns the most recent message move tasks of the queue source (name,
// URL or ARN), newest first: at most limit (1 to 10; 0 means 10), as SQS keeps them.
func ListMoveTasks(ctx context.Context, api MoveTaskAPI, source string, limit int) ([]MoveTask, error) {
	sourceARN, err := resolveARN(ctx, api, source)
	if err != nil {
		return nil, err
	}
	return listMoveTasks(ctx, api, sourceARN, limit)
}

// MoveTaskLister is the one SQS call [ListMoveTasksOfARN] makes. *sqs.Client satisfies it.
type MoveTaskLister interface {
	ListMessageMoveTasks(ctx context.Context, input *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

// ListMoveTasksOfARN is [ListMoveTasks] for a source already known by its ARN: exactly
// one ListMessageMoveTasks call and no queue lookup, for callers that poll at a bounded
// rate (the operations page). limit is 1 to 10; 0 means 10.
func ListMoveTasksOfARN(ctx context.Context, api MoveTaskLister, sourceARN string, limit int) ([]MoveTask, error) {
	return listMoveTasks(ctx, api, sourceARN, limit)
}

func listMoveTasks(ctx context.Context, api MoveTaskLister, sourceARN string, limit int) ([]MoveTask, error) {
	if limit <= 0 || limit > maxListedMoveTasks {
		limit = maxListedMoveTasks
	}
	output, err := api.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{
		SourceArn:  aws.String(sourceARN),
		MaxResults: aws.Int32(int32(limit)),
	})
	if err != nil {
		return nil, fmt.Errorf("redrive: listing message move tasks of %s: %w", sourceARN, err)
	}
	tasks := make([]MoveTask, 0, len(output.Results))
	for _, entry := range output.Results {
		tasks = append(tasks, fromEntry(entry))
	}
	return tasks, nil
}

func fromEntry(entry types.ListMessageMoveTasksResultEntry) MoveTask {
	task := MoveTask{
		Handle:         aws.ToString(entry.TaskHandle),
		Status:         MoveTaskStatus(aws.ToString(entry.Status)),
		SourceARN:      aws.ToString(entry.SourceArn),
		DestinationARN: aws.ToString(entry.DestinationArn),
		RatePerSecond:  int(aws.ToInt32(entry.MaxNumberOfMessagesPerSecond)),
		Moved:          entry.ApproximateNumberOfMessagesMoved,
		ToMove:         aws.ToInt64(entry.ApproximateNumberOfMessagesToMove),
		FailureReason:  aws.ToString(entry.FailureReason),
	}
	if entry.StartedTimestamp > 0 {
		task.StartedAt = time.UnixMilli(entry.StartedTimestamp)
	}
	return task
}

// CancelMoveTask cancels the RUNNING task with the given handle (CancelMessageMoveTask)
// and returns how many messages it had moved. Messages already moved stay moved. SQS
// accepts only RUNNING tasks; the task passes through CANCELLING to CANCELLED.
func CancelMoveTask(ctx context.Context, api MoveTaskAPI, handle string) (moved int64, err error) {
	output, err := api.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(handle)})
	if err != nil {
		return 0, fmt.Errorf("redrive: cancelling message move task: %w", err)
	}
	return output.ApproximateNumberOfMessagesMoved, nil
}

// CancelActiveMoveTask finds the running move task of the queue source (name, URL or
// ARN) and cancels it. It returns the task as listed before the cancel, with Moved
// updated from the cancel's answer, or [ErrNoActiveMoveTask].
func CancelActiveMoveTask(ctx context.Context, api MoveTaskAPI, source string) (*MoveTask, error) {
	tasks, err := ListMoveTasks(ctx, api, source, 1)
	if err != nil {
		return nil, err
	}
	if len(tasks) == 0 || tasks[0].Status != MoveTaskRunning || tasks[0].Handle == "" {
		return nil, fmt.Errorf("%w: %s", ErrNoActiveMoveTask, source)
	}
	task := tasks[0]
	if task.Moved, err = CancelMoveTask(ctx, api, task.Handle); err != nil {
		return nil, err
	}
	task.Status = MoveTaskCancelling
	return &task, nil
}

// moveCountSettle bounds how long [WaitMoveTask] keeps polling a COMPLETED task whose
// ApproximateNumberOfMessagesMoved is still below ApproximateNumberOfMessagesToMove: on
// AWS the count may lag the status.
const moveCountSettle = 30 * time.Second

// moveTaskListWait bounds how long [WaitMoveTask] waits for a task it has not seen yet
// to appear in ListMessageMoveTasks.
const moveTaskListWait = 10 * time.Second

// ErrMoveTaskNotListed is returned (wrapped) by [WaitMoveTask] when a task it has seen
// is no longer among the queue's listed tasks. AWS lists the 10 most recent tasks,
// CANCELLED ones included; ElasticMQ 1.7.1 drops a cancelled task at once.
var ErrMoveTaskNotListed = errors.New("redrive: the message move task is no longer listed by ListMessageMoveTasks")

// WaitMoveTask polls ListMessageMoveTasks every interval (if zero, 1 s) until task ends,
// calling progress (if not nil) with each new state, and returns the final state. A task
// that FAILED or was CANCELLED is returned without error: check Status. A COMPLETED task
// is polled on, for up to 30 s, until its moved count reaches its to-move count, which
// on AWS may lag the status. Errors: a failed ListMessageMoveTasks request,
// [ErrMoveTaskNotListed] for a task that vanished from the list before it ended (or did
// not appear in it within 10 s), ctx's error.
//
// SQS lists a task's handle only while it runs, so the task is recognised by its handle
// first and by its start time after that; a task that ended before the first poll is the
// newest task of the queue.
func WaitMoveTask(ctx context.Context, api MoveTaskAPI, task *MoveTask, interval time.Duration, progress func(MoveTask)) (*MoveTask, error) {
	if interval <= 0 {
		interval = time.Second
	}
	current := *task
	// A task with a start time was listed before; one without (just started) may take a
	// moment to appear.
	seen := !current.StartedAt.IsZero()
	var settleBy, missingSince time.Time
	for {
		tasks, err := listMoveTasks(ctx, api, current.SourceARN, maxListedMoveTasks)
		if err != nil {
			return &current, err
		}
		found, ok := findTask(tasks, current)
		if !ok {
			if missingSince.IsZero() {
				missingSince = time.Now()
			}
			if seen || time.Since(missingSince) > moveTaskListWait {
				return &current, fmt.Errorf("%w: task %s on %s, last seen %s (moved %d of %d); check the queues' message counts",
					ErrMoveTaskNotListed, orUnknown(current.Handle), current.SourceARN, current.Status, current.Moved, current.ToMove)
			}
		}
		if ok {
			seen, missingSince = true, time.Time{}
			if found.Handle == "" {
				found.Handle = current.Handle
			}
			changed := found != current
			current = found
			if changed && progress != nil {
				progress(current)
			}
			if current.Status == MoveTaskCompleted && current.Moved < current.ToMove {
				if settleBy.IsZero() {
					settleBy = time.Now().Add(moveCountSettle)
				}
				if time.Now().Before(settleBy) {
					if err := sleep(ctx, interval); err != nil {
						return &current, fmt.Errorf("redrive: waiting for move task: %w", err)
					}
					continue
				}
			}
			if current.Status.Done() {
				return &current, nil
			}
		}
		if err := sleep(ctx, interval); err != nil {
			return &current, fmt.Errorf("redrive: waiting for move task: %w", err)
		}
	}
}

func findTask(tasks []MoveTask, want MoveTask) (MoveTask, bool) {
	for _, task := range tasks {
		if !want.StartedAt.IsZero() && task.StartedAt.Equal(want.StartedAt) {
			return task, true
		}
		if want.StartedAt.IsZero() && want.Handle != "" && task.Handle == want.Handle {
			return task, true
		}
	}
	if want.StartedAt.IsZero() && len(tasks) > 0 {
		return tasks[0], true
	}
	return MoveTask{}, false
}

func orUnknown(handle string) string {
	if handle == "" {
		return "(handle unknown)"
	}
	return handle
}
