package producer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
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
	// Logger receives one info line per hop ([Producer.Hop]: message id,
	// queue, due time, the hop's delay and the new message's id); if nil,
	// slog.Default(). Bodies are never logged.
	Logger *slog.Logger
}

// Job is one job to send. Exactly one of Payload and Body is set.
type Job struct {
	// Type is the job type, sent as the [sqsworker.AttributeJobType] attribute that a
	// [sqsworker.ServeMux] routes on. Empty sends no type (a plain message).
	Type string
	// Payload is encoded with encoding/json as the body.
	Payload any
	// Body is sent as it is (it must be non-empty; SQS accepts only some Unicode
	// characters: #x9, #xA, #xD, #x20 to #xD7FF, #xE000 to #xFFFD, #x10000 to #x10FFFF).
	Body string
	// Delay is how long SQS keeps the job invisible before it is first delivered. Up to
	// Config.MaxHop (15 min) it is DelaySeconds, rounded up to whole seconds; longer
	// delays are sent as hops with the [sqsworker.AttributeDueAt] attribute (standard
	// queues only: FIFO queues take no per-message delay), up to Config.DueAtHorizon
	// (365 days by default).
	Delay time.Duration
	// IdempotencyKey is sent as the [sqsworker.AttributeIdempotencyKey] attribute, which
	// the idempotency middleware uses by default.
	IdempotencyKey string
	// GroupID is the message group id: required on FIFO queues (ordering), and on
	// standard queues the tenant key of SQS fair queues.
	GroupID string
	// DeduplicationID is the FIFO deduplication id (5-minute window). FIFO queues only;
	// without it the queue must have content-based deduplication.
	DeduplicationID string
	// UniqueKey makes the job unique: while the key is taken (UniqueFor), another Send
	// with the same key sends nothing and returns a [*DuplicateJobError] with the first
	// job's message id. On a standard queue it needs Config.Unique; on a FIFO queue it is
	// the deduplication id (when DeduplicationID is empty): SQS accepts a duplicate sent
	// within its 5-minute deduplication interval without delivering it, and Send returns
	// no error for it.
	UniqueKey string
	// UniqueFor is how long UniqueKey stays taken after the send (the unique window);
	// if zero, DefaultUniqueFor. At least MinUniqueFor (1 s), and longer than Delay (a
	// key that expired before the job runs would let a duplicate in).
	UniqueFor time.Duration
	// UniqueMode says whether the key is freed before its window ends: when the job is
	// done or has started, by [UniqueMiddleware] on the consumer side (standard queues
	// only). The zero value is UniqueUntilWindowEnds.
	UniqueMode UniqueMode
	// Attributes are further message attributes. The producer's own (job type,
	// idempotency key, due time, trace context) take precedence; SQS allows 10 in all.
	Attributes map[string]types.MessageAttributeValue
}

// Producer sends jobs. It is safe for concurrent use; it reads each queue's
// MaximumMessageSize once, at its first send to the queue.
type Producer struct {
	api    API
	config Config

	mu     sync.Mutex
	queues map[string]*queueEntry
}

// queueLimits is what the producer knows about one queue.
type queueLimits struct {
	url     string
	fifo    bool
	maxSize int
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

// Send sends one job to queueURL and returns its SQS message id.
//
// Errors: an invalid job (both or neither of Payload and Body, a payload that does not
// encode, a delay that is negative or past Config.DueAtHorizon, FIFO rules, more than 10
// attributes), [*TooLargeError], [*DuplicateJobError]
// for a unique key already taken, the PayloadStore's or the unique store's error, and
// SendMessage's error, each wrapped with the queue.
func (p *Producer) Send(ctx context.Context, queueURL string, job Job) (string, error) {
	out, err := p.prepare(ctx, queueURL, job)
	if err != nil {
		return "", err
	}
	return p.finish(ctx, out, p.sendOne(ctx, out.message))
}

// sendOne sends one prepared message with SendMessage.
func (p *Producer) sendOne(ctx context.Context, message *outMessage) sendResult {
	output, err := p.api.SendMessage(ctx, message.input())
	if err != nil {
		return sendResult{err: fmt.Errorf("producer: sending to %s: %w", message.queueURL, err)}
	}
	return sendResult{id: aws.ToString(output.MessageId)}
}

// sendResult is the outcome of sending one message.
type sendResult struct {
	id  string
	err error
}

// outMessage is a job ready for SendMessage or one SendMessageBatch entry.
type outMessage struct {
	queueURL     string
	body         string
	attributes   map[string]types.MessageAttributeValue
	delaySeconds int32
	groupID      string
	dedupID      string
	size         int
}

func (m *outMessage) input() *sqs.SendMessageInput {
	input := &sqs.SendMessageInput{
		QueueUrl:          aws.String(m.queueURL),
		MessageBody:       aws.String(m.body),
		MessageAttributes: m.attributes,
		DelaySeconds:      m.delaySeconds,
	}
	if m.groupID != "" {
		input.MessageGroupId = aws.String(m.groupID)
	}
	if m.dedupID != "" {
		input.MessageDeduplicationId = aws.String(m.dedupID)
	}
	return input
}

// entry returns the message as a SendMessageBatch entry (sqsx sets its Id).
func (m *outMessage) entry() types.SendMessageBatchRequestEntry {
	entry := types.SendMessageBatchRequestEntry{
		MessageBody:       aws.String(m.body),
		MessageAttributes: m.attributes,
		DelaySeconds:      m.delaySeconds,
	}
	if m.groupID != "" {
		entry.MessageGroupId = aws.String(m.groupID)
	}
	if m.dedupID != "" {
		entry.MessageDeduplicationId = aws.String(m.dedupID)
	}
	return entry
}

// outgoing is a prepared job: its message and, for a unique job, its reservation.
type outgoing struct {
	message     *outMessage
	reservation *reservation
}

// prepare checks and encodes a job, measures it, offloads it when too large and
// reserves its unique key.
func (p *Producer) prepare(ctx context.Context, queueURL string, job Job) (*outgoing, error) {
	r, attributes, err := p.uniqueReservation(queueURL, job)
	if err != nil {
		return nil, err
	}
	job.Attributes = attributes
	message, err := p.build(ctx, queueURL, job)
	if err != nil {
		return nil, err
	}
	if r != nil {
		if err := p.reserve(ctx, r); err != nil {
			return nil, err
		}
	}
	return &outgoing{message: message, reservation: r}, nil
}

// finish completes or releases the job's reservation after its send.
func (p *Producer) finish(ctx context.Context, out *outgoing, result sendResult) (string, error) {
	if out.reservation == nil {
		return result.id, result.err
	}
	if result.err != nil {
		p.release(ctx, out.reservation)
		return "", result.err
	}
	if err := p.confirm(ctx, out.reservation, result.id); err != nil {
		return result.id, err
	}
	return result.id, nil
}

// build turns a job into a message for queueURL.
func (p *Producer) build(ctx context.Context, queueURL string, job Job) (*outMessage, error) {
	fifo := isFIFO(queueURL)
	body, err := jobBody(job)
	if err != nil {
		return nil, err
	}
	message := &outMessage{queueURL: queueURL, body: body, groupID: job.GroupID, dedupID: job.DeduplicationID}
	attributes := make(map[string]types.MessageAttributeValue, len(job.Attributes)+4)
	maps.Copy(attributes, job.Attributes)
	for key, value := range p.traceContext(ctx) {
		if value != "" {
			attributes[key] = stringValue(value)
		}
	}
	if job.Type != "" {
		attributes[sqsworker.AttributeJobType] = stringValue(job.Type)
	}
	if job.IdempotencyKey != "" {
		attributes[sqsworker.AttributeIdempotencyKey] = stringValue(job.IdempotencyKey)
	}

	switch {
	case job.Delay < 0:
		return nil, fmt.Errorf("producer: job delay %s is negative", job.Delay)
	case job.Delay > p.config.DueAtHorizon:
		return nil, fmt.Errorf("producer: job delay %s is longer than the due-time horizon of %s (Config.DueAtHorizon)", job.Delay, p.config.DueAtHorizon)
	case job.Delay > 0 && fifo:
		return nil, fmt.Errorf("producer: queue %s is FIFO, and FIFO queues take no per-message delay (set the queue's DelaySeconds instead)", queueURL)
	case job.Delay > p.config.MaxHop:
		due := p.config.Now().Add(job.Delay)
		attributes[sqsworker.AttributeDueAt] = dueAtValue(due)
		message.delaySeconds = sqsx.DelaySeconds(p.config.MaxHop)
	default:
		message.delaySeconds = sqsx.DelaySeconds(job.Delay)
	}

	if fifo {
		if job.GroupID == "" {
			return nil, fmt.Errorf("producer: queue %s is FIFO and the job has no GroupID (SQS requires a message group id)", queueURL)
		}
		if message.dedupID == "" {
			message.dedupID = job.UniqueKey
		}
	} else if job.DeduplicationID != "" {
		return nil, fmt.Errorf("producer: queue %s is a standard queue and takes no DeduplicationID (use UniqueKey)", queueURL)
	}
	if len(attributes) > sqsinfo.MaxMessageAttributes {
		return nil, fmt.Errorf("producer: the job has %d message attributes (with the producer's own), SQS allows %d", len(attributes), sqsinfo.MaxMessageAttributes)
	}
	message.attributes = attributes
	if err := p.fit(ctx, message); err != nil {
		return nil, err
	}
	return message, nil
}

// fit checks the message's size against the queue's limit, offloading it when a store
// is configured.
func (p *Producer) fit(ctx context.Context, message *outMessage) error {
	limits, err := p.limits(ctx, message.queueURL)
	if err != nil {
		return err
	}
	message.size = len(message.body) + sqsx.SDKAttributesSize(message.attributes)
	threshold := p.config.OffloadThreshold
	if threshold == 0 || threshold > limits.maxSize {
		threshold = limits.maxSize
	}
	if message.size <= threshold {
		return nil
	}
	if p.config.PayloadStore == nil {
		return &TooLargeError{QueueURL: message.queueURL, Size: message.size, Limit: limits.maxSize}
	}
	body, attributes, err := p.config.PayloadStore.Offload(ctx, message.queueURL, message.body, message.attributes)
	if err != nil {
		return fmt.Errorf("producer: offloading a %d-byte message for %s: %w", message.size, message.queueURL, err)
	}
	message.body, message.attributes = body, attributes
	message.size = len(body) + sqsx.SDKAttributesSize(attributes)
	if message.size > limits.maxSize {
		return &TooLargeError{QueueURL: message.queueURL, Size: message.size, Limit: limits.maxSize, Offloaded: true}
	}
	if len(attributes) > sqsinfo.MaxMessageAttributes {
		return fmt.Errorf("producer: the offloaded message has %d message attributes, SQS allows %d", len(attributes), sqsinfo.MaxMessageAttributes)
	}
	return nil
}

// limits returns what the producer knows about queueURL, reading its attributes once:
// concurrent first sends to a queue wait for one GetQueueAttributes. A failed read is
// not kept, so the next send tries again.
func (p *Producer) limits(ctx context.Context, queueURL string) (*queueLimits, error) {
	p.mu.Lock()
	entry, ok := p.queues[queueURL]
	if !ok {
		entry = &queueEntry{ready: make(chan struct{})}
		p.queues[queueURL] = entry
	}
	p.mu.Unlock()
	if ok {
		select {
		case <-entry.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("producer: waiting for the attributes of %s: %w", queueURL, ctx.Err())
		}
		if entry.err != nil {
			return nil, entry.err
		}
		return entry.limits, nil
	}
	entry.limits, entry.err = p.readLimits(ctx, queueURL)
	if entry.err != nil {
		p.mu.Lock()
		delete(p.queues, queueURL)
		p.mu.Unlock()
	}
	close(entry.ready)
	return entry.limits, entry.err
}

// queueEntry is one queue's limits, or the read in progress (until ready is closed).
type queueEntry struct {
	ready  chan struct{}
	limits *queueLimits
	err    error
}

// readLimits reads queueURL's MaximumMessageSize with GetQueueAttributes.
func (p *Producer) readLimits(ctx context.Context, queueURL string) (*queueLimits, error) {
	output, err := p.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameMaximumMessageSize},
	})
	if err != nil {
		return nil, fmt.Errorf("producer: reading MaximumMessageSize of %s: %w", queueURL, err)
	}
	limits := &queueLimits{url: queueURL, fifo: isFIFO(queueURL), maxSize: sqsinfo.DefaultMaximumMessageSize}
	if text, ok := output.Attributes[string(types.QueueAttributeNameMaximumMessageSize)]; ok {
		size, err := strconv.Atoi(text)
		if err != nil || size <= 0 {
			return nil, fmt.Errorf("producer: queue %s: MaximumMessageSize %q is not a positive number", queueURL, text)
		}
		limits.maxSize = size
	}
	return limits, nil
}

// W3C Trace Context names (https://www.w3.org/TR/trace-context/), the attributes the
// default trace context carries on.
const (
	attributeTraceparent = "traceparent"
	attributeTracestate  = "tracestate"
)

// traceContext returns the trace attributes for a job sent in ctx.
func (p *Producer) traceContext(ctx context.Context) map[string]string {
	if p.config.TraceContext != nil {
		return p.config.TraceContext(ctx)
	}
	message, ok := sqsworker.MessageFromContext(ctx)
	if !ok {
		return nil
	}
	trace := map[string]string{}
	for _, name := range []string{attributeTraceparent, attributeTracestate} {
		if value, ok := message.StringAttribute(name); ok {
			trace[name] = value
		}
	}
	return trace
}

// jobBody returns the body of a job: its raw Body or its JSON-encoded Payload.
func jobBody(job Job) (string, error) {
	switch {
	case job.Payload != nil && job.Body != "":
		return "", errors.New("producer: the job sets both Payload and Body")
	case job.Body != "":
		return job.Body, nil
	case job.Payload == nil:
		return "", errors.New("producer: the job has neither Payload nor Body (SQS takes no empty body)")
	}
	encoded, err := json.Marshal(job.Payload)
	if err != nil {
		return "", fmt.Errorf("producer: encoding the %q job's payload: %w", job.Type, err)
	}
	return string(encoded), nil
}

// isFIFO reports whether queueURL names a FIFO queue: SQS requires FIFO queue names to
// end in ".fifo", and no standard queue's name may.
func isFIFO(queueURL string) bool {
	return sqsinfo.IsFIFOName(queueURL)
}

func stringValue(value string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
}

func dueAtValue(due time.Time) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.FormatInt(due.UnixMilli(), 10))}
}
