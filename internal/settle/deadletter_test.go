package settle_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// smallQueue is a test queue pair whose source and dead-letter queues accept messages
// of at most 256 KiB (LocalStack defaults to 1 MiB, as SQS does for new queues).
func smallQueue(t *testing.T, client *sqs.Client) (testenv.Queue, *sqsinfo.Queue) {
	t.Helper()
	testenv.SkipOn(t, testenv.ElasticMQIgnoresSizeAndRetention)
	created := testenv.NewQueue(t, client, testenv.QueueOptions{})
	for _, url := range []string{created.URL, created.DeadLetterQueueURL} {
		_, err := client.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
			QueueUrl:   aws.String(url),
			Attributes: map[string]string{"MaximumMessageSize": strconv.Itoa(sqsinfo.DefaultMaximumMessageSize)},
		})
		require.NoError(t, err)
	}
	queue, err := sqsinfo.LoadQueue(context.Background(), client, created.URL)
	require.NoError(t, err)
	require.Equal(t, sqsinfo.DefaultMaximumMessageSize, queue.MaximumMessageSize)
	return created, queue
}

// bodyOfSize returns a body that makes a message with attributes exactly size bytes.
func bodyOfSize(size int, attributes map[string]sqsworker.MessageAttribute) string {
	return strings.Repeat("b", size-sqsx.MessageSize(&sqsworker.Message{Body: "", MessageAttributes: attributes}))
}

func TestMessageSizeCountsAsSQSDoes(t *testing.T) {
	t.Parallel()
	attributes := map[string]sqsworker.MessageAttribute{
		"tenant": {DataType: "String", StringValue: "acme"},       // 6 + 6 + 4
		"blob":   {DataType: "Binary", BinaryValue: []byte{1, 2}}, // 4 + 6 + 2
	}
	assert.Equal(t, len("héllo")+16+12, sqsx.MessageSize(&sqsworker.Message{Body: "héllo", MessageAttributes: attributes}))
}

// TestSendToDeadLetterQueueFitsTheSizeLimit: a message at exactly the queue's size limit
// is dead-lettered without failure attributes; with a little room the reason is kept,
// then the message id, then a shortened error text.
func TestSendToDeadLetterQueueFitsTheSizeLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	created, queue := smallQueue(t, client)
	outcome := sqsworker.Classify(sqsworker.Permanent("TooBig", errors.New("cannot process: "+strings.Repeat("e", 2000))))
	original := map[string]sqsworker.MessageAttribute{"tenant": {DataType: "String", StringValue: "acme"}}
	reasonCost := len(sqsworker.AttributeFailureReason) + len("String") + len("TooBig")
	idCost := len(sqsworker.AttributeFailureMessageID) + len("String") + len("m-0") // every id below is 3 bytes
	errorOverhead := len(sqsworker.AttributeFailureError) + len("String")

	tests := []struct {
		name      string
		room      int // bytes below the limit
		wantNames []string
		wantError int // length of failure-error, 0 when absent
	}{
		{"exactly at the limit", 0, []string{"tenant"}, 0},
		{"room for the reason only", reasonCost, []string{"tenant", sqsworker.AttributeFailureReason}, 0},
		{"room for the reason and the message id", reasonCost + idCost, []string{"tenant", sqsworker.AttributeFailureReason, sqsworker.AttributeFailureMessageID}, 0},
		{"room for the reason, the message id and 40 bytes of error", reasonCost + idCost + errorOverhead + 40,
			[]string{"tenant", sqsworker.AttributeFailureReason, sqsworker.AttributeFailureMessageID, sqsworker.AttributeFailureError}, 40},
	}
	for i, tc := range tests {
		message := &sqsworker.Message{
			ID:                "m-" + strconv.Itoa(i),
			Body:              bodyOfSize(queue.MaximumMessageSize-tc.room, original),
			ReceiveCount:      1,
			MessageAttributes: original,
		}
		require.Equal(t, queue.MaximumMessageSize-tc.room, sqsx.MessageSize(message))
		require.NoError(t, settle.SendToDeadLetterQueue(ctx, client, queue, message, outcome), tc.name)
		received := receiveOne(t, client, created.DeadLetterQueueURL)
		assert.Equal(t, message.Body, aws.ToString(received.Body), tc.name)
		var names []string
		for name := range received.MessageAttributes {
			names = append(names, name)
		}
		assert.ElementsMatch(t, tc.wantNames, names, tc.name)
		if tc.wantError > 0 {
			text := aws.ToString(received.MessageAttributes[sqsworker.AttributeFailureError].StringValue)
			assert.Len(t, text, tc.wantError, tc.name)
			assert.True(t, strings.HasPrefix(text, "permanent failure (TooBig): cannot") && strings.HasSuffix(text, "..."), text)
		}
		deleteMessage(t, client, created.DeadLetterQueueURL, received)
	}
}

// TestSendToDeadLetterQueueKeepsToTenAttributes: with 7 attributes of its own, the
// message gets the first 3 failure attributes in the documented order (reason, message
// id, error); with 9, only the reason. (It was refused with ErrDeadLetterAttributes, and
// its handler ran again.)
func TestSendToDeadLetterQueueKeepsToTenAttributes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	created := testenv.NewQueue(t, client, testenv.QueueOptions{})
	queue, err := sqsinfo.LoadQueue(ctx, client, created.URL)
	require.NoError(t, err)
	for _, own := range []int{7, 9} {
		attributes := map[string]sqsworker.MessageAttribute{}
		for i := range own {
			name := string(rune('a' + i))
			attributes[name] = sqsworker.MessageAttribute{DataType: "String", StringValue: name}
		}
		message := &sqsworker.Message{ID: "m-many-" + strconv.Itoa(own), Body: "x", ReceiveCount: 1, MessageAttributes: attributes}
		require.NoError(t, settle.SendToDeadLetterQueue(ctx, client, queue, message, sqsworker.Classify(sqsworker.Permanent("X", nil))))
		received := receiveOne(t, client, created.DeadLetterQueueURL)
		got := received.MessageAttributes
		assert.Len(t, got, min(own+3, 10))
		assert.Equal(t, "X", aws.ToString(got[sqsworker.AttributeFailureReason].StringValue))
		if own == 7 { // reason, message id, error; the receive count and source queue come last and are dropped
			assert.Equal(t, message.ID, aws.ToString(got[sqsworker.AttributeFailureMessageID].StringValue))
			assert.Contains(t, got, sqsworker.AttributeFailureError)
			assert.NotContains(t, got, sqsworker.AttributeFailureReceiveCount)
			assert.NotContains(t, got, sqsworker.AttributeFailureSourceQueue)
		}
		deleteMessage(t, client, created.DeadLetterQueueURL, received)
	}
}

// tooSmallDLQ answers the first SendMessage with failure attributes as SQS does when the
// dead-letter queue's limit is below the source queue's.
type tooSmallDLQ struct{ inputs []*sqs.SendMessageInput }

func (f *tooSmallDLQ) SendMessage(_ context.Context, input *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.inputs = append(f.inputs, input)
	if _, ok := input.MessageAttributes[sqsworker.AttributeFailureReason]; ok {
		return nil, &smithyError{code: "InvalidParameterValue", message: "One or more parameters are invalid. Reason: Message must be shorter than 262144 bytes."}
	}
	return &sqs.SendMessageOutput{MessageId: aws.String("dlq-1")}, nil
}

type smithyError struct{ code, message string }

func (e *smithyError) Error() string                 { return e.code + ": " + e.message }
func (e *smithyError) ErrorCode() string             { return e.code }
func (e *smithyError) ErrorMessage() string          { return e.message }
func (e *smithyError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

func TestSendToDeadLetterQueueRetriesWithoutFailureAttributesWhenRefusedAsTooLarge(t *testing.T) {
	t.Parallel()
	api := &tooSmallDLQ{}
	queue := &sqsinfo.Queue{URL: "https://sqs.us-east-1.amazonaws.com/1/q", DeadLetterQueueURL: "https://sqs.us-east-1.amazonaws.com/1/q-dlq", MaximumMessageSize: 1048576}
	message := &sqsworker.Message{ID: "m", Body: "x", ReceiveCount: 1, MessageAttributes: map[string]sqsworker.MessageAttribute{"tenant": {DataType: "String", StringValue: "acme"}}}
	require.NoError(t, settle.SendToDeadLetterQueue(context.Background(), api, queue, message, sqsworker.Classify(sqsworker.Permanent("X", nil))))
	require.Len(t, api.inputs, 2)
	assert.Equal(t, map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")}}, api.inputs[1].MessageAttributes)
}

func deleteMessage(t *testing.T, client *sqs.Client, url string, message types.Message) {
	t.Helper()
	_, err := client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: message.ReceiptHandle})
	require.NoError(t, err)
}
