package tasktoken

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// API is the part of the Step Functions client (*sfn.Client) the middleware uses. The
// worker's role needs states:SendTaskSuccess, states:SendTaskFailure and
// states:SendTaskHeartbeat (on the state machine's ARN, as the Step Functions Developer
// Guide's IAM examples for the callback pattern grant them).
type API interface {
	SendTaskSuccess(ctx context.Context, input *sfn.SendTaskSuccessInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	SendTaskFailure(ctx context.Context, input *sfn.SendTaskFailureInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error)
	SendTaskHeartbeat(ctx context.Context, input *sfn.SendTaskHeartbeatInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskHeartbeatOutput, error)
}

// Token says where a message carries its task token: a top-level string field of its JSON
// body ([BodyField]) or a String message attribute ([Attribute]), as the state's
// Parameters put $$.Task.Token there.
type Token struct {
	bodyField string
	attribute string
}

// BodyField takes the token from the top-level string field name of the JSON body, for
// "MessageBody": {"taskToken.$": "$$.Task.Token", ...}. The handler sees the body without
// that field, so a strict JSON job type ([sqsworker.JSONHandler]) need not declare it.
func BodyField(name string) Token { return Token{bodyField: name} }

// Attribute takes the token from the String message attribute name, for
// "MessageAttributes": {"name": {"DataType": "String", "StringValue.$": "$$.Task.Token"}}.
// The body is left as sent.
func Attribute(name string) Token { return Token{attribute: name} }

// The defaults of [Config].
const (
	// DefaultCallTimeout bounds one Step Functions call when Config.CallTimeout is zero.
	DefaultCallTimeout = 10 * time.Second
)

// Config configures the middleware [New] returns.
type Config struct {
	// API answers the tasks: an *sfn.Client. Required.
	API API
	// Token says where the messages carry their task token. Required.
	Token Token
	// HeartbeatInterval is how often SendTaskHeartbeat is sent while the handler runs;
	// zero sends none (the one before a redelivered message's handler, receive count
	// above 1, which asks whether the task is still open, is sent whatever this is). Set it well below the
	// state's HeartbeatSeconds, for example a third of it, so a late or failed heartbeat
	// does not time the task out.
	HeartbeatInterval time.Duration
	// MaxReceiveCount is the redrive policy's maxReceiveCount of the queues the
	// middleware serves: the attempt whose receive count reaches it is the last, and
	// reports the failure. Zero reads it from each queue's redrive policy through Queues
	// (once per queue). Either MaxReceiveCount or Queues is required; a queue with no
	// redrive policy never has a last attempt (the state's TimeoutSeconds ends the task).
	MaxReceiveCount int
	// Queues reads a queue's redrive policy when MaxReceiveCount is zero: an *sqs.Client.
	Queues sqsinfo.QueueAttributesAPI
	// CallTimeout bounds each Step Functions call; if zero, [DefaultCallTimeout]. The
	// answer is sent even when the handler's context has ended.
	CallTimeout time.Duration
	// Logger receives a line for every task answered with a failure, found closed or
	// whose answer failed; nil discards them. Bodies and tokens are never logged.
	Logger *slog.Logger
}

// check returns what is wrong with c, or nil.
func (c Config) check() error {
	var problems []error
	if c.API == nil {
		problems = append(problems, errors.New("tasktoken: Config.API is required (an *sfn.Client)"))
	}
	if (c.Token.bodyField == "") == (c.Token.attribute == "") {
		problems = append(problems, errors.New("tasktoken: Config.Token is required: BodyField(name) or Attribute(name), with a name"))
	}
	if c.HeartbeatInterval < 0 {
		problems = append(problems, errors.New("tasktoken: Config.HeartbeatInterval must not be negative"))
	}
	if c.MaxReceiveCount < 0 {
		problems = append(problems, errors.New("tasktoken: Config.MaxReceiveCount must not be negative"))
	}
	if c.MaxReceiveCount == 0 && c.Queues == nil {
		problems = append(problems, errors.New("tasktoken: set Config.MaxReceiveCount or Config.Queues (an *sqs.Client, to read each queue's redrive policy), so the last attempt can report the failure"))
	}
	if c.CallTimeout < 0 {
		problems = append(problems, errors.New("tasktoken: Config.CallTimeout must not be negative"))
	}
	return errors.Join(problems...)
}
