package settle_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

func TestSendToDeadLetterQueueAddsFailureAttributes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	created := testenv.NewQueue(t, client, testenv.QueueOptions{})
	queue, err := sqsinfo.LoadQueue(ctx, client, created.URL)
	require.NoError(t, err)

	message := &sqsworker.Message{
		ID:           "m-1",
		Body:         `{"deliveryId":"d-1"}`,
		ReceiveCount: 2,
		MessageAttributes: map[string]sqsworker.MessageAttribute{
			"tenant": {DataType: "String", StringValue: "acme"},
		},
	}
	outcome := sqsworker.Classify(sqsworker.Permanent("HTTP410", errors.New("endpoint answered 410 Gone: "+strings.Repeat("x", 3000))))
	require.NoError(t, settle.SendToDeadLetterQueue(ctx, client, queue, message, outcome))

	received := receiveOne(t, client, created.DeadLetterQueueURL)
	assert.Equal(t, message.Body, aws.ToString(received.Body))
	attributes := received.MessageAttributes
	assert.Equal(t, "acme", aws.ToString(attributes["tenant"].StringValue))
	assert.Equal(t, "HTTP410", aws.ToString(attributes[sqsworker.AttributeFailureReason].StringValue))
	assert.Equal(t, "m-1", aws.ToString(attributes[sqsworker.AttributeFailureMessageID].StringValue))
	errorText := aws.ToString(attributes[sqsworker.AttributeFailureError].StringValue)
	assert.True(t, strings.HasPrefix(errorText, "permanent failure (HTTP410): endpoint answered 410 Gone"), errorText)
	assert.Len(t, errorText, settle.MaxFailureErrorBytes)
	assert.True(t, strings.HasSuffix(errorText, "..."))
	assert.Equal(t, created.ARN, aws.ToString(attributes[sqsworker.AttributeFailureSourceQueue].StringValue))
	assert.Equal(t, "2", aws.ToString(attributes[sqsworker.AttributeFailureReceiveCount].StringValue))
	assert.Equal(t, "Number", aws.ToString(attributes[sqsworker.AttributeFailureReceiveCount].DataType))
}

func TestSendToDeadLetterQueueKeepsTheFIFOGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	created := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
	queue, err := sqsinfo.LoadQueue(ctx, client, created.URL)
	require.NoError(t, err)
	require.True(t, queue.FIFO)
	require.True(t, queue.DeadLetterQueueFIFO)

	message := &sqsworker.Message{ID: "m-fifo", Body: "poison", ReceiveCount: 1, GroupID: "g1"}
	outcome := sqsworker.Classify(sqsworker.Permanent("Poison", nil))
	require.NoError(t, settle.SendToDeadLetterQueue(ctx, client, queue, message, outcome))
	// A repeated send after a crash is deduplicated by the message id.
	require.NoError(t, settle.SendToDeadLetterQueue(ctx, client, queue, message, outcome))

	received := receiveOne(t, client, created.DeadLetterQueueURL)
	assert.Equal(t, "g1", received.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)])
	assert.Equal(t, "m-fifo", received.Attributes[string(types.MessageSystemAttributeNameMessageDeduplicationId)])
	visible, inFlight := testenv.Counts(t, client, created.DeadLetterQueueURL)
	assert.Equal(t, 0, visible, "the second send must be deduplicated")
	assert.Equal(t, 1, inFlight)
}

func receiveOne(t *testing.T, client *sqs.Client, url string) types.Message {
	t.Helper()
	messages := testenv.Receive(t, client, sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	}, 1, testenv.ReceiveTimeout)
	require.Len(t, messages, 1)
	return messages[0]
}
