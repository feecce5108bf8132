// Package saga is the order saga run on Step Functions with sqsworker jobs: charge,
// reserve and ship, three job types sent by one state machine with
// arn:aws:states:::sqs:sendMessage.waitForTaskToken; when a step fails, the state
// machine's Catch runs the compensations (release, then refund) in reverse order, each a
// job too. The state machine owns the order, the retries between steps and the
// compensation; each job owns its effect and its idempotency key (order id and step), so
// a job run twice (a redelivery after a worker died mid-step) has its effect once.
package saga

import (
	"context"
	"fmt"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/tasktoken"
)

// Job is the body the state machine sends (without the task token, which the middleware
// takes out).
type Job struct {
	// Type is the step: charge, reserve, ship, release or refund.
	Type string `json:"type"`
	// Order is the order id.
	Order string `json:"order"`
	// Fail names a step that fails permanently (to show the compensations); empty: none.
	Fail string `json:"fail,omitempty"`
}

// Effects applies each step's effect once per idempotency key: the stand-in for the
// payment, stock and shipping services, which take the key with each call. [Ledger]
// keeps them in memory (one process); [DynamoDBLedger] in a DynamoDB table, so workers
// in different processes (one killed mid-step, one that runs the step again) share them.
type Effects interface {
	// Apply records effect under key unless the key was seen, and reports whether it
	// did. An error means it is unknown whether the effect was recorded; the step is
	// retried, and the key keeps the retry from applying it twice.
	Apply(ctx context.Context, key, effect string) (applied bool, err error)
}

// MaxOrderBytes is the longest order id a job may carry, in bytes: its idempotency key
// ("ORDER/STEP") must stay far below DynamoDB's 2,048-byte partition key limit.
const MaxOrderBytes = 256

// Handler runs every step of the saga against effects: its effect under the key
// "ORDER/STEP", then the step's output for the state machine. A step named by Job.Fail
// fails permanently with reason "Saga.StepFailed", which the state machine catches; an
// unknown step with "Saga.UnknownStep"; an empty order id, or one over MaxOrderBytes, with
// "Saga.InvalidOrder" (nothing applied). An error from effects is returned as it is (the
// message is retried).
func Handler(effects Effects) sqsworker.Handler {
	return sqsworker.JSONHandler(func(ctx context.Context, job Job) error {
		switch job.Type {
		case "charge", "reserve", "ship", "release", "refund":
		default:
			return sqsworker.Permanent("Saga.UnknownStep", fmt.Errorf("unknown step %q", job.Type))
		}
		if job.Order == "" || len(job.Order) > MaxOrderBytes {
			return sqsworker.Permanent("Saga.InvalidOrder", fmt.Errorf("order id of %d bytes; want 1 to %d", len(job.Order), MaxOrderBytes))
		}
		if job.Fail == job.Type {
			return sqsworker.Permanent("Saga.StepFailed", fmt.Errorf("%s failed for order %s", job.Type, job.Order))
		}
		if _, err := effects.Apply(ctx, job.Order+"/"+job.Type, job.Type+" "+job.Order); err != nil {
			return fmt.Errorf("saga: %s for order %s: %w", job.Type, job.Order, err)
		}
		return tasktoken.SetOutput(ctx, map[string]string{"step": job.Type, "order": job.Order})
	})
}

// Definition is the saga's state machine (Amazon States Language) sending every step to
// queueURL, the token in the body's "taskToken" field. ResultPath keeps the input for
// the next step; a failed step's Catch runs the compensations of the steps before it,
// newest first, then fails the execution with "OrderFailed".
func Definition(queueURL string) map[string]any {
	step := func(name, next string, catch string) map[string]any {
		state := map[string]any{
			"Type":     "Task",
			"Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
			"Parameters": map[string]any{
				"QueueUrl":    queueURL,
				"MessageBody": map[string]any{"type": name, "order.$": "$.order", "fail.$": "$.fail", "taskToken.$": "$$.Task.Token"},
			},
			"ResultPath": "$.results." + name,
		}
		if next == "" {
			state["End"] = true
		} else {
			state["Next"] = next
		}
		if catch != "" {
			state["Catch"] = []any{map[string]any{"ErrorEquals": []string{"States.ALL"}, "ResultPath": "$.error", "Next": catch}}
		}
		return state
	}
	return map[string]any{
		"Comment": "Order saga: charge, reserve, ship; compensate with release and refund.",
		"StartAt": "Charge",
		"States": map[string]any{
			"Charge":      step("charge", "Reserve", "OrderFailed"),
			"Reserve":     step("reserve", "Ship", "Refund"),
			"Ship":        step("ship", "Shipped", "Release"),
			"Shipped":     map[string]any{"Type": "Succeed"},
			"Release":     step("release", "Refund", ""),
			"Refund":      step("refund", "OrderFailed", ""),
			"OrderFailed": map[string]any{"Type": "Fail", "Error": "OrderFailed", "Cause": "a step failed; its predecessors were compensated"},
		},
	}
}
