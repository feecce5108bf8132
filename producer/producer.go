package producer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// API is the part of the SQS client the producer uses; *sqs.Client satisfies it.
type API interface {
	SendMessage(ctx context.Context, input *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Defaults for [Config].
const (
	// DefaultMaxHop is the longest delay of one send: SQS's DelaySeconds limit of 15
	// minutes. Longer delays are carried by hops.
	DefaultMaxHop = sqsinfo.MaxDelay
	// DefaultUniqueFor is how long a unique job's key stays taken when Job.UniqueFor is zero.
	DefaultUniqueFor = time.Hour
	// DefaultUniqueWait is how long a duplicate waits for the first producer's message id.
	DefaultUniqueWait = 10 * time.Second
	// DefaultUniquePending is how long a reservation whose send is not confirmed holds its key.
	DefaultUniquePending = time.Minute
)

// Config configures a [Producer]. The zero value sends jobs without claim check, unique
// jobs (on standard queues) or trace context.
type Config struct {
	// PayloadStore, if not nil, takes the body of a message above OffloadThreshold out of
	// the message (claim check). Without it such a job fails with [*TooLargeError].
	PayloadStore PayloadStore
	// Encrypter, if not nil, encrypts every job's body (see [Encrypter]); the
	// encryption attribute is one of the job's 10. Jobs that [Producer.Hop] re-sends
	// keep the body they were received with. A [Prepared] stored in an outbox holds the
	// body in clear until its send.
	Encrypter Encrypter
	// OffloadThreshold is the size in bytes (body plus message attributes, as SQS counts
	// them) above which a message goes to PayloadStore; if zero, the queue's
	// MaximumMessageSize (at most 1 MiB). Negative values are rejected by New.
	OffloadThreshold int
	// Unique, if not nil, enforces Job.UniqueKey on standard queues (see
	// [DynamoDBUniqueStore]). FIFO queues use the deduplication id instead.
	Unique UniqueStore
	// UniqueWait bounds how long a Send of a unique key waits for the producer that
	// reserved it first to report its message id; if zero, DefaultUniqueWait (10 s).
	UniqueWait time.Duration
	// UniquePending is how long a reservation holds its key until its send is confirmed
	// (a producer that crashes in between blocks the key that long); if zero,
	// DefaultUniquePending (1 min).
	UniquePending time.Duration
	// TraceContext returns the trace context of ctx as key-value pairs (for example W3C
	// "traceparent" and "tracestate"), each sent as a String message attribute. With
	// OpenTelemetry: `carrier := propagation.MapCarrier{};
	// otel.GetTextMapPropagator().Inject(ctx, carrier); return carrier`. If nil, a job
	// sent from a handler a sqsworker.ServeMux runs carries on the "traceparent" and
	// "tracestate" attributes of the message being handled (see
	// sqsworker.MessageFromContext), and other jobs carry none.
	TraceContext func(ctx context.Context) map[string]string
	// MaxHop is the longest delay of one send, from 1 s to 15 min; if zero,
	// DefaultMaxHop (15 min, SQS's DelaySeconds limit). A job delayed longer is sent with
	// MaxHop and its due time, and the worker's sqsworker.DelayMiddleware re-sends it
	// through [Producer.Hop], MaxHop at a time. Tests shorten it.
	MaxHop time.Duration
	// DueAtHorizon is the longest Job.Delay Send accepts; if zero,
	// sqsworker.DefaultDueAtHorizon (365 days). The worker's bound is
	// sqsworker.DelayDueAtHorizon (further, or malformed, and the job fails permanently:
	// see sqsworker.Message.DueIn): producers and workers of one queue should agree on it.
	DueAtHorizon time.Duration
	// Now is the clock for due times and unique keys; if nil, time.Now.
	Now func() time.Time
	// Tenant, if not nil, returns a job's tenant key (a customer, an account, a client
	// application), sent as the MessageGroupId of every job to a standard queue whose
	// Job.GroupID is empty, so SQS fair queues apply: when one tenant holds a large
	// share of the queue's in-flight messages, SQS hands the other tenants' messages out
	// first ("Amazon SQS fair queues" in the Developer Guide). On a standard queue the
	// group orders nothing (messages of one tenant are still delivered in any order and
	// handled in parallel); FIFO queues keep Job.GroupID as it is, since there the group
	// is the ordering. An empty key sends no group (SQS counts such a message as a
	// tenant of its own); a key SQS would refuse (see sqsinfo.CheckMessageGroupID) fails
	// the send. It is called by Send, SendBatch and a Batcher's Send, not by the
	// package-level [Prepare], which has no producer: set Job.GroupID there.
	Tenant func(job Job) string
	// Logger receives one info line per hop ([Producer.Hop]: message id,
	// queue, due time, the hop's delay and the new message's id); if nil,
	// slog.Default(). Bodies are never logged.
	Logger *slog.Logger
}

// Producer sends jobs. It is safe for concurrent use; it reads each queue's
// MaximumMessageSize once, at its first send to the queue.
type Producer struct {
	api    API
	config Config

	mu     sync.Mutex
	queues map[string]*queueEntry
}

// New returns a producer sending through api. It returns an error naming every invalid
// Config field.
func New(api API, config Config) (*Producer, error) {
	var errs []error
	if api == nil {
		errs = append(errs, errors.New("producer: nil SQS client"))
	}
	if config.OffloadThreshold < 0 {
		errs = append(errs, fmt.Errorf("producer: Config.OffloadThreshold is negative (%d)", config.OffloadThreshold))
	}
	if config.MaxHop != 0 && (config.MaxHop < time.Second || config.MaxHop > sqsinfo.MaxDelay) {
		errs = append(errs, fmt.Errorf("producer: Config.MaxHop %s is outside 1s to 15m (SQS's DelaySeconds range)", config.MaxHop))
	}
	if config.DueAtHorizon < 0 {
		errs = append(errs, fmt.Errorf("producer: Config.DueAtHorizon %s is negative", config.DueAtHorizon))
	}
	if config.UniqueWait < 0 || config.UniquePending < 0 {
		errs = append(errs, errors.New("producer: Config.UniqueWait and Config.UniquePending must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if config.MaxHop == 0 {
		config.MaxHop = DefaultMaxHop
	}
	if config.UniqueWait == 0 {
		config.UniqueWait = DefaultUniqueWait
	}
	if config.UniquePending == 0 {
		config.UniquePending = DefaultUniquePending
	}
	if config.Now == nil {
		config.Now = time.Now
	}
	if config.DueAtHorizon == 0 {
		config.DueAtHorizon = sqsworker.DefaultDueAtHorizon
	}
	if config.Logger == nil {
		config.Logger = slog.Default()
	}
	return &Producer{api: api, config: config, queues: map[string]*queueEntry{}}, nil
}
