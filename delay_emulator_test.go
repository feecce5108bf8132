package sqsworker_test

// The delay hops on the local SQS emulator (see internal/testing/testenv): a producer
// sends, a poller runs DelayMiddleware with the producer as its Hopper. Each test runs
// in parallel with the others on its own queues.

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

func newProducer(t *testing.T, api producer.API, config producer.Config) *producer.Producer {
	t.Helper()
	p, err := producer.New(api, config)
	require.NoError(t, err)
	return p
}

// startPoller runs a poller on queueURL for the test; options adjust its Config.
func startPoller(t *testing.T, client *sqs.Client, queueURL string, handler sqsworker.Handler, options ...func(*poller.Config)) *poller.Server {
	t.Helper()
	config := poller.Config{QueueURL: queueURL, WaitTime: time.Second, Logger: slog.New(slog.DiscardHandler)}
	for _, option := range options {
		option(&config)
	}
	server, err := poller.New(client, config, handler)
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
	return server
}

// scaledClock runs factor times faster than the wall clock, from start.
func scaledClock(factor int) func() time.Time {
	start := time.Now()
	return func() time.Time {
		return start.Add(time.Since(start) * time.Duration(factor))
	}
}

// sendCounter counts the SendMessage calls of a producer (its first send and its hops).
type sendCounter struct {
	producer.API
	sends atomic.Int32
}

func (c *sendCounter) SendMessage(ctx context.Context, input *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.sends.Add(1)
	return c.API.SendMessage(ctx, input, optFns...)
}

// TestEmulatorFortyMinuteDelayThroughHops delays a job 40 minutes on a clock that runs
// 300 times faster than the wall clock, with hops of 1 s (5 clock minutes, plus each
// receive's latency): the job hops at least twice, is handled once, not before it is
// due, with a receive count of 1, although the queue's redrive policy allows only 2
// receives.
func TestEmulatorFortyMinuteDelayThroughHops(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 2})
	clock := scaledClock(300)
	api := &sendCounter{API: client}
	p := newProducer(t, api, producer.Config{MaxHop: time.Second, Now: clock})

	type handling struct {
		at           time.Time
		receiveCount int
	}
	var mu sync.Mutex
	var handled []handling
	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "report", func(ctx context.Context, job struct{ Month string }) error {
		message, _ := sqsworker.MessageFromContext(ctx)
		mu.Lock()
		handled = append(handled, handling{clock(), message.ReceiveCount})
		mu.Unlock()
		return nil
	})
	// maxReceiveCount 2 is refused by default (every receive counts); here it shows that
	// hops count none.
	server := startPoller(t, client, queue.URL, sqsworker.Chain(mux, sqsworker.DelayMiddleware(p, sqsworker.DelayClock(clock))), func(c *poller.Config) { c.AllowLowMaxReceiveCount = true })

	sentAt := clock()
	_, err := p.Send(context.Background(), queue.URL, producer.Job{Type: "report", Payload: map[string]string{"Month": "2026-11"}, Delay: 40 * time.Minute})
	require.NoError(t, err)
	due := sentAt.Add(40 * time.Minute)

	// 40 clock minutes are 8 s; each hop adds a receive's latency on top.
	testenv.Eventually(t, 60*time.Second, "the job handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) > 0
	})
	testenv.WaitQueueEmpty(t, client, queue.URL, 45*time.Second)
	testenv.Eventually(t, 10*time.Second, "every delete confirmed", func() bool { return server.Stats().InFlight == 0 })

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, handled, 1, "handled exactly once")
	assert.False(t, handled[0].at.Before(due), "handled at %s, due %s", handled[0].at, due)
	assert.Equal(t, 1, handled[0].receiveCount)
	assert.GreaterOrEqual(t, api.sends.Load(), int32(3), "the first send and at least two hops")
	t.Logf("%d sends (the first and its hops) for a 40-minute delay in hops of 5 clock minutes", api.sends.Load())
	assert.EqualValues(t, api.sends.Load(), server.Stats().Received, "every hop received once")
	visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL)
	assert.Zero(t, visible+inFlight, "waiting counted no receives toward the redrive policy")
}

// TestEmulatorFarOrMalformedDueAtDeadLettersWithoutHopping: a plain SendMessage (any
// sender) with a due-at two years ahead, and one with a due-at that is no number of
// milliseconds, each reach the dead-letter queue after exactly one receive with their
// reason and error, and neither hops: the producer sends nothing and logs no hop. Before
// the horizon, the first hopped every MaxHop for ever and never reached the dead-letter
// queue, and the second ran its handler at once.
func TestEmulatorFarOrMalformedDueAtDeadLettersWithoutHopping(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	api := &sendCounter{API: client}
	logs, logger := testenv.NewLogLines()
	p := newProducer(t, api, producer.Config{MaxHop: time.Second, Logger: logger})
	var handled atomic.Int32
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("report", func(context.Context, *sqsworker.Message) error { handled.Add(1); return nil })
	server := startPoller(t, client, queue.URL, sqsworker.Chain(mux, sqsworker.DelayMiddleware(p)))

	ctx := context.Background()
	far := time.Now().Add(2 * sqsworker.DefaultDueAtHorizon)
	send := func(body, dataType, dueAt string) {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl:    aws.String(queue.URL),
			MessageBody: aws.String(body),
			MessageAttributes: map[string]types.MessageAttributeValue{
				sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String("report")},
				sqsworker.AttributeDueAt:   {DataType: aws.String(dataType), StringValue: aws.String(dueAt)},
			},
		})
		require.NoError(t, err)
	}
	send("far", "Number", strconv.FormatInt(far.UnixMilli(), 10))
	send("malformed", "String", "next tuesday")
	// The producer refuses such a delay at the send, before SQS sees it.
	_, err := p.Send(ctx, queue.URL, producer.Job{Type: "report", Body: "x", Delay: 2 * sqsworker.DefaultDueAtHorizon})
	require.ErrorContains(t, err, "longer than the due-time horizon")

	dead := map[string]types.Message{}
	testenv.Eventually(t, 30*time.Second, "both jobs in the dead-letter queue", func() bool {
		output, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queue.DeadLetterQueueURL), WaitTimeSeconds: 1, MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"},
		})
		require.NoError(t, err)
		for _, message := range output.Messages {
			dead[aws.ToString(message.Body)] = message
		}
		return len(dead) == 2
	})
	attribute := func(body, name string) string {
		return aws.ToString(dead[body].MessageAttributes[name].StringValue)
	}
	assert.Equal(t, sqsworker.ReasonDueAtTooFar, attribute("far", sqsworker.AttributeFailureReason))
	assert.Contains(t, attribute("far", sqsworker.AttributeFailureError), "further than the due-time horizon of 8760h0m0s")
	assert.Equal(t, "1", attribute("far", sqsworker.AttributeFailureReceiveCount), "dead-lettered after exactly one receive")
	assert.Equal(t, sqsworker.ReasonMalformedDueAt, attribute("malformed", sqsworker.AttributeFailureReason))
	assert.Contains(t, attribute("malformed", sqsworker.AttributeFailureError), `"next tuesday" (String) is not a positive integer`)
	assert.Equal(t, "1", attribute("malformed", sqsworker.AttributeFailureReceiveCount))
	testenv.Eventually(t, 10*time.Second, "both originals deleted", func() bool { return server.Stats().Deleted == 2 })
	testenv.WaitQueueEmpty(t, client, queue.URL, 45*time.Second)
	assert.EqualValues(t, 2, server.Stats().Received, "one receive each")
	assert.Zero(t, api.sends.Load(), "no hop")
	assert.Empty(t, logs.Records("producer: delayed job re-sent"))
	assert.Zero(t, handled.Load())
}

// TestEmulatorHopLeavesOneInfoLine: a job delayed past one hop on the emulator leaves
// exactly one info line per hop, with the id SQS gave the new message.
func TestEmulatorHopLeavesOneInfoLine(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	// The clock stands still until the first hop's line is logged, then jumps past the
	// due time: the job hops at least once however late its first receive comes (a
	// clock running on its own let a slow receive find the job due, with no hop).
	var jumped atomic.Bool
	start := time.Now()
	clock := func() time.Time {
		if jumped.Load() {
			return start.Add(3 * time.Minute)
		}
		return start
	}
	logs, logger := testenv.NewLogLines()
	api := &sendCounter{API: client}
	p := newProducer(t, api, producer.Config{MaxHop: time.Second, Now: clock, Logger: logger})
	var handled atomic.Int32
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("report", func(context.Context, *sqsworker.Message) error { handled.Add(1); return nil })
	server := startPoller(t, client, queue.URL, sqsworker.Chain(mux, sqsworker.DelayMiddleware(p, sqsworker.DelayClock(clock))))
	first, err := p.Send(context.Background(), queue.URL, producer.Job{Type: "report", Body: "x", Delay: 2 * time.Minute})
	require.NoError(t, err)
	testenv.Eventually(t, 60*time.Second, "the first hop logged", func() bool {
		return len(logs.Records("producer: delayed job re-sent")) > 0
	})
	jumped.Store(true)
	testenv.Eventually(t, 60*time.Second, "the job handled", func() bool { return handled.Load() == 1 })
	testenv.Eventually(t, 10*time.Second, "every delete confirmed", func() bool { return server.Stats().InFlight == 0 })

	hops := logs.Records("producer: delayed job re-sent")
	require.Len(t, hops, int(api.sends.Load())-1, "one line per hop (every send but the first)")
	require.NotEmpty(t, hops)
	assert.Equal(t, first, hops[0]["message_id"])
	assert.Equal(t, queue.URL, hops[0]["queue"])
	for i, hop := range hops {
		assert.Equal(t, "INFO", hop["level"])
		assert.NotEmpty(t, hop["new_message_id"])
		if i > 0 {
			assert.Equal(t, hops[i-1]["new_message_id"], hop["message_id"], "each hop re-sends the previous hop's message")
		}
	}
	assert.Len(t, logs.Records(""), len(hops), "no other line")
}
