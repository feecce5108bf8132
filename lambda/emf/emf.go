// Package emf writes one CloudWatch embedded metric format (EMF) line per Lambda
// invocation of an sqsworker batch handler: counts of what became of the batch's records
// and the longest handler run and receive lag, by queue. Lambda sends stdout to
// CloudWatch Logs, which turns EMF lines into CloudWatch metrics, so recording costs no
// network call
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
//
//	recorder := emf.New(emf.Config{Namespace: "orders-worker"})
//	batch, err := lambda.NewBatchHandler(h, lambda.WithObserver(recorder))
//	if err != nil {
//		log.Fatal(err)
//	}
//	awslambda.Start(recorder.Wrap(batch.Handle))
package emf

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsworker/sqsworker"
)

// DefaultNamespace is Config.Namespace when empty.
const DefaultNamespace = "sqsworker"

// DimensionQueue is the one dimension of every metric: the queue's name, from the first
// record's eventSourceARN (an event source mapping reads one queue).
const DimensionQueue = "QueueName"

// The metrics of every line, in this order, with their CloudWatch units; count is the
// sqsworker.Count a count metric adds (an event adds its sqsworker.Event.Tally).
var metricUnits = [...]struct {
	name, unit string
	count      sqsworker.Count
}{
	{"Received", "Count", sqsworker.CountReceived},
	{"Succeeded", "Count", sqsworker.CountDeleted},
	{"Failed", "Count", sqsworker.CountFailed},
	{"Deferred", "Count", sqsworker.CountDeferred},
	{"DeadLettered", "Count", sqsworker.CountDeadLettered},
	{"DeadLetterFailures", "Count", sqsworker.CountDeadLetterFailures},
	{"Released", "Count", sqsworker.CountReleased},
	{"Abandoned", "Count", sqsworker.CountAbandoned},
	{"HandlerDurationMax", "Milliseconds", -1},
	{"ReceiveLagMax", "Milliseconds", -1},
}

// Config configures [New].
type Config struct {
	// Namespace is the CloudWatch namespace (1 to 255 characters); if empty,
	// DefaultNamespace.
	Namespace string
	// Writer receives the lines; if nil, os.Stdout (what Lambda sends to CloudWatch Logs).
	Writer io.Writer
	// Now is the clock of the lines' Timestamp; if nil, time.Now.
	Now func() time.Time
}

// Recorder is a [sqsworker.Observer] for the Lambda host that counts each invocation's
// events and writes them as one EMF line when the invocation returns ([Recorder.Wrap]).
// Events outside a wrapped invocation are ignored. It is safe for concurrent
// invocations (Lambda Managed Instances run several at once in one process): each
// invocation's counts travel in its own context, so each line counts only its own
// invocation's records, and lines are written whole, one at a time.
type Recorder struct {
	cfg     Config
	writing sync.Mutex
}

// New returns a Recorder with cfg's defaults filled in.
func New(cfg Config) *Recorder {
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.Writer == nil {
		cfg.Writer = os.Stdout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Recorder{cfg: cfg}
}

type invocationKey struct{}

// invocation holds one invocation's counts, indexed like metricUnits.
type invocation struct {
	values [len(metricUnits)]atomic.Int64
}

// The indexes of the two maxima in metricUnits.
const (
	handlerDurationMax = len(metricUnits) - 2
	receiveLagMax      = len(metricUnits) - 1
)

// Wrap returns handle with one EMF line written after every invocation, whatever it
// returned. A write error is ignored: metrics never fail an invocation. The returned
// function may be called concurrently.
func (r *Recorder) Wrap(handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, event events.SQSEvent) (events.SQSEventResponse, error) {
		inv := &invocation{}
		response, err := handle(context.WithValue(ctx, invocationKey{}, inv), event)
		queue := ""
		if len(event.Records) > 0 {
			arn := event.Records[0].EventSourceARN
			queue = arn[strings.LastIndexByte(arn, ':')+1:]
		}
		r.write(queue, inv)
		return response, err
	}
}

// Observe implements [sqsworker.Observer].
func (r *Recorder) Observe(ctx context.Context, ev sqsworker.Event) {
	inv, ok := ctx.Value(invocationKey{}).(*invocation)
	if !ok {
		return
	}
	tally := ev.Tally()
	for i, m := range metricUnits {
		if m.count >= 0 && tally[m.count] != 0 {
			inv.values[i].Add(tally[m.count])
		}
	}
	switch ev.Kind {
	case sqsworker.EventReceived:
		inv.max(receiveLagMax, ev.ReceiveLag.Milliseconds())
	case sqsworker.EventFinished:
		inv.max(handlerDurationMax, ev.HandlerDuration.Milliseconds())
	}
}

func (inv *invocation) max(index int, value int64) {
	for {
		current := inv.values[index].Load()
		if value <= current || inv.values[index].CompareAndSwap(current, value) {
			return
		}
	}
}

type metricDefinition struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type directive struct {
	Namespace  string             `json:"Namespace"`
	Dimensions [][]string         `json:"Dimensions"`
	Metrics    []metricDefinition `json:"Metrics"`
}

type metadata struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

func (r *Recorder) write(queue string, inv *invocation) {
	line := make(map[string]any, len(metricUnits)+2)
	definitions := make([]metricDefinition, len(metricUnits))
	for i, m := range metricUnits {
		definitions[i] = metricDefinition{Name: m.name, Unit: m.unit}
		line[m.name] = inv.values[i].Load()
	}
	line[DimensionQueue] = queue
	line["_aws"] = metadata{
		Timestamp: r.cfg.Now().UnixMilli(),
		CloudWatchMetrics: []directive{{
			Namespace:  r.cfg.Namespace,
			Dimensions: [][]string{{DimensionQueue}},
			Metrics:    definitions,
		}},
	}
	encoded, err := json.Marshal(line)
	if err != nil {
		return
	}
	r.writing.Lock()
	defer r.writing.Unlock()
	_, _ = r.cfg.Writer.Write(append(encoded, '\n'))
}
