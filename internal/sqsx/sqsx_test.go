package sqsx_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
)

func TestMessageSizeCountsBodyAndEachAttributesNameTypeAndValue(t *testing.T) {
	t.Parallel()
	message := &sqsworker.Message{Body: "12345", MessageAttributes: map[string]sqsworker.MessageAttribute{
		"type": {DataType: "String", StringValue: "order"},      // 4 + 6 + 5
		"blob": {DataType: "Binary", BinaryValue: []byte{1, 2}}, // 4 + 6 + 2
	}}
	assert.Equal(t, 5+15+12, sqsx.MessageSize(message))
	entry := types.SendMessageBatchRequestEntry{MessageBody: aws.String("12345"), MessageAttributes: sqsx.ToSDKAttributes(message.MessageAttributes)}
	assert.Equal(t, sqsx.MessageSize(message), sqsx.SendEntrySize(entry))
}

func TestSecondsRoundUpAndBound(t *testing.T) {
	t.Parallel()
	assert.Equal(t, int32(2), sqsx.VisibilitySeconds(1200*time.Millisecond))
	assert.Equal(t, int32(0), sqsx.VisibilitySeconds(-time.Second))
	assert.Equal(t, int32(43200), sqsx.VisibilitySeconds(13*time.Hour))
	assert.Equal(t, int32(900), sqsx.DelaySeconds(time.Hour))
	assert.Equal(t, int32(1), sqsx.DelaySeconds(time.Nanosecond))
	assert.Equal(t, int32(20), sqsx.WaitSeconds(time.Minute))
	assert.Equal(t, 12*time.Hour-time.Hour-sqsx.VisibilitySafetyMargin, sqsx.ClampVisibility(24*time.Hour, time.Hour))
	assert.Equal(t, time.Duration(0), sqsx.ClampVisibility(time.Minute, 13*time.Hour))
}

func TestChunkByCountAndBytes(t *testing.T) {
	t.Parallel()
	items := make([]int, 23)
	for i := range items {
		items[i] = i
	}
	chunks := sqsx.Chunk(items, 0, nil, 0)
	require.Len(t, chunks, 3)
	assert.Len(t, chunks[0], 10)
	assert.Len(t, chunks[2], 3)

	sizes := []int{400, 400, 400, 2000, 100, 100}
	chunks = sqsx.Chunk(sizes, 0, func(n int) int { return n }, 1000)
	assert.Equal(t, [][]int{{400, 400}, {400}, {2000}, {100, 100}}, chunks)
	assert.Empty(t, sqsx.Chunk([]int{}, 0, nil, 0))
	assert.Equal(t, [][]int{{0, 1, 2}, {3, 4}}, sqsx.Chunk([]int{0, 1, 2, 3, 4}, 3, nil, 0))
}

// scripted answers each call with a function of the ids it was given.
func TestBatchReadsEveryEntry(t *testing.T) {
	t.Parallel()
	items := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	var calls [][]string
	results := sqsx.Batch(context.Background(), "DeleteMessageBatch", items, nil, 0,
		func(_ context.Context, ids []string, chunk []string) (sqsx.Response, error) {
			calls = append(calls, append([]string(nil), chunk...))
			if len(calls) == 2 {
				return sqsx.Response{}, errors.New("connection reset")
			}
			return sqsx.Response{
				Successful: []sqsx.Success{{ID: ids[0]}, {ID: ids[0]}, {ID: "99"}, {ID: "01"}, {ID: ids[3]}},
				Failed: []types.BatchResultErrorEntry{
					{Id: aws.String(ids[0]), Code: aws.String("Late")}, // duplicate: the first answer wins
					{Id: aws.String(ids[1]), Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true},
					{Id: aws.String(ids[2]), Code: aws.String("InternalError")},
				},
			}, nil
		})
	require.Len(t, calls, 2)
	assert.Equal(t, items[:10], calls[0])
	require.Len(t, results, len(items))
	assert.NoError(t, results[0].Err)
	assert.NoError(t, results[3].Err)

	sender, ok := errors.AsType[*sqsx.EntryError](results[1].Err)
	require.True(t, ok)
	assert.True(t, sender.SenderFault)
	assert.False(t, sqsx.Retryable(results[1].Err))
	assert.Equal(t, "ReceiptHandleIsInvalid", sqsx.ErrorCode(results[1].Err))

	assert.True(t, sqsx.Retryable(results[2].Err))
	assert.Equal(t, "InternalError", sqsx.ErrorCode(results[2].Err))
	for i := 4; i < 10; i++ {
		assert.Equal(t, sqsx.CodeMissing, sqsx.ErrorCode(results[i].Err), "entry %d is in neither list", i)
		assert.True(t, sqsx.Retryable(results[i].Err))
	}
	for i := 10; i < 12; i++ {
		callErr, ok := errors.AsType[*sqsx.CallError](results[i].Err)
		require.True(t, ok)
		assert.Equal(t, 2, callErr.Entries)
		assert.True(t, sqsx.Retryable(results[i].Err))
	}
	assert.False(t, sqsx.Retryable(nil))
	assert.False(t, sqsx.Retryable(&sqsx.CallError{Err: context.Canceled}))
}

func TestSendMessagesPacksByBytesAndRefusesOversizedEntries(t *testing.T) {
	t.Parallel()
	api := &sendAPI{}
	body := func(n int) types.SendMessageBatchRequestEntry {
		return types.SendMessageBatchRequestEntry{Id: aws.String("ignored"), MessageBody: aws.String(strings.Repeat("x", n))}
	}
	entries := []types.SendMessageBatchRequestEntry{body(400), body(500), body(2000), body(10), body(20)}
	results := sqsx.SendMessages(context.Background(), api, "http://q", entries, 1000)
	require.Len(t, results, 5)
	assert.Equal(t, [][]string{{"0", "1"}, {"0", "1"}}, api.ids, "one id scheme; the oversized entry is never sent")
	assert.Equal(t, "m-400", results[0].MessageID)
	assert.Equal(t, "m-500", results[1].MessageID)
	assert.Equal(t, sqsx.CodeTooLarge, sqsx.ErrorCode(results[2].Err))
	assert.False(t, sqsx.Retryable(results[2].Err))
	assert.Equal(t, "m-10", results[3].MessageID)
	assert.Equal(t, "m-20", results[4].MessageID)
}

type sendAPI struct{ ids [][]string }

func (s *sendAPI) SendMessageBatch(_ context.Context, input *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	var ids []string
	output := &sqs.SendMessageBatchOutput{}
	for _, entry := range input.Entries {
		ids = append(ids, aws.ToString(entry.Id))
		output.Successful = append(output.Successful, types.SendMessageBatchResultEntry{Id: entry.Id, MessageId: aws.String(fmt.Sprintf("m-%d", len(aws.ToString(entry.MessageBody))))})
	}
	s.ids = append(s.ids, ids)
	return output, nil
}

func TestFromSDKReadsSystemAttributes(t *testing.T) {
	t.Parallel()
	in := types.Message{
		MessageId: aws.String("m1"), Body: aws.String("b"), ReceiptHandle: aws.String("rh"),
		Attributes: map[string]string{
			"ApproximateReceiveCount": "3", "SentTimestamp": "1700000000000", "ApproximateFirstReceiveTimestamp": "1700000001000",
			"MessageGroupId": "g", "MessageDeduplicationId": "d",
		},
		MessageAttributes: map[string]types.MessageAttributeValue{"type": {DataType: aws.String("String"), StringValue: aws.String("x")}},
	}
	m := sqsx.FromSDK(in, "url", "arn")
	assert.Equal(t, "m1", m.ID)
	assert.Equal(t, 3, m.ReceiveCount)
	assert.Equal(t, time.UnixMilli(1700000000000), m.SentAt)
	assert.Equal(t, time.UnixMilli(1700000001000), m.FirstReceivedAt)
	assert.Equal(t, "g", m.GroupID)
	assert.Equal(t, "d", m.DeduplicationID)
	assert.Equal(t, "url", m.QueueURL)
	assert.Equal(t, "arn", m.QueueARN)
	assert.Equal(t, "x", m.MessageAttributes["type"].StringValue)
	assert.Equal(t, 1, sqsx.FromSDK(types.Message{}, "", "").ReceiveCount, "a missing receive count is 1")
}

func TestApplySystemAttributes(t *testing.T) {
	message := &sqsworker.Message{Attributes: map[string]string{
		"ApproximateReceiveCount":          "3",
		"SentTimestamp":                    "1700000000000",
		"ApproximateFirstReceiveTimestamp": "1700000001500",
		"MessageGroupId":                   "g1",
		"MessageDeduplicationId":           "d1",
	}}
	sqsx.ApplySystemAttributes(message)
	assert.Equal(t, 3, message.ReceiveCount)
	assert.Equal(t, time.UnixMilli(1700000000000), message.SentAt)
	assert.Equal(t, time.UnixMilli(1700000001500), message.FirstReceivedAt)
	assert.Equal(t, "g1", message.GroupID)
	assert.Equal(t, "d1", message.DeduplicationID)
	assert.Equal(t, 2*time.Second, message.SinceFirstReceive(time.UnixMilli(1700000003500)))

	empty := &sqsworker.Message{}
	sqsx.ApplySystemAttributes(empty)
	assert.Equal(t, 1, empty.ReceiveCount, "a received message has been received at least once")
	assert.Zero(t, empty.SinceFirstReceive(time.Now()))
}
