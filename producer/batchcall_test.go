package producer

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
)

// failingBatchSQS fails every SendMessageBatch call whose first entry's body is "fail".
type failingBatchSQS struct{ *fakeSQS }

func (f failingBatchSQS) SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if aws.ToString(input.Entries[0].MessageBody) == "fail" {
		return nil, errors.New("connection reset")
	}
	return f.fakeSQS.SendMessageBatch(ctx, input, optFns...)
}

// TestIsBatchCallErrorTellsAFailedCallFromAJobsOwnFailure: the jobs of a failed
// SendMessageBatch call report IsBatchCallError; a job SQS refused on its own (a sender
// fault) and a job refused before any call (too large) do not.
func TestIsBatchCallErrorTellsAFailedCallFromAJobsOwnFailure(t *testing.T) {
	fake := newFake()
	fake.maxSize = 1024
	fake.entryFailure = func(body string) *types.BatchResultErrorEntry {
		if body == "refused" {
			return &types.BatchResultErrorEntry{Code: aws.String("InvalidParameterValue"), Message: aws.String("no"), SenderFault: true}
		}
		return nil
	}
	p := newProducer(t, failingBatchSQS{fake}, Config{})

	results, err := p.SendBatch(context.Background(), standardURL, []Job{{Body: "fail"}, {Body: "also in the failed call"}})
	require.Error(t, err)
	for i, result := range results {
		assert.True(t, IsBatchCallError(result.Err), "job %d: %v", i, result.Err)
	}

	results, err = p.SendBatch(context.Background(), standardURL, []Job{{Body: "ok"}, {Body: "refused"}, {Body: strings.Repeat("x", 2048)}})
	require.Error(t, err)
	require.NoError(t, results[0].Err)
	for _, i := range []int{1, 2} {
		require.Error(t, results[i].Err, i)
		assert.False(t, IsBatchCallError(results[i].Err), "job %d: %v", i, results[i].Err)
	}
	assert.False(t, IsBatchCallError(nil))
}
