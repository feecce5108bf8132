package sqsinfo_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

func TestParseQueueARN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, arn, url string
		fifo           bool
	}{
		{name: "standard", arn: "arn:aws:sqs:eu-west-1:123456789012:orders", url: "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"},
		{name: "fifo", arn: "arn:aws:sqs:us-east-1:000000000000:q.fifo", url: "https://sqs.us-east-1.amazonaws.com/000000000000/q.fifo", fifo: true},
		{name: "china", arn: "arn:aws-cn:sqs:cn-north-1:123456789012:q", url: "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arn, err := sqsinfo.ParseQueueARN(tc.arn)
			require.NoError(t, err)
			assert.Equal(t, tc.arn, arn.String())
			assert.Equal(t, tc.url, arn.URL())
			assert.Equal(t, tc.fifo, arn.FIFO())
		})
	}
	for _, bad := range []string{"", "orders", "arn:aws:sns:eu-west-1:1:t", "arn:aws:sqs:eu-west-1:1", "arn:aws:sqs::1:q", "arn:aws:sqs:r::q", "arn:aws:sqs:r:1:", "arn::sqs:r:1:q", "arn:aws:sqs:r:1:a/b"} {
		_, err := sqsinfo.ParseQueueARN(bad)
		assert.Error(t, err, bad)
	}
}

type urlAPI struct{ inputs []*sqs.GetQueueUrlInput }

func (u *urlAPI) GetQueueUrl(_ context.Context, input *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	u.inputs = append(u.inputs, input)
	if aws.ToString(input.QueueName) == "missing" {
		return nil, &types.QueueDoesNotExist{Message: aws.String("no")}
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("http://q/" + aws.ToString(input.QueueOwnerAWSAccountId) + "/" + aws.ToString(input.QueueName))}, nil
}

func TestResolveQueueURL(t *testing.T) {
	t.Parallel()
	api := &urlAPI{}
	ctx := context.Background()
	url, err := sqsinfo.ResolveQueueURL(ctx, api, "http://localhost:4566/000000000000/q")
	require.NoError(t, err)
	assert.Equal(t, "http://localhost:4566/000000000000/q", url)
	assert.Empty(t, api.inputs, "a URL is not looked up")

	url, err = sqsinfo.ResolveQueueURL(ctx, api, "arn:aws:sqs:eu-west-1:123:orders")
	require.NoError(t, err)
	assert.Equal(t, "http://q/123/orders", url)

	url, err = sqsinfo.ResolveQueueURL(ctx, api, "orders")
	require.NoError(t, err)
	assert.Equal(t, "http://q//orders", url)

	_, err = sqsinfo.ResolveQueueURL(ctx, api, "missing")
	assert.ErrorIs(t, err, sqsinfo.ErrQueueNotFound)
	assert.True(t, sqsinfo.IsQueueNotFound(err))
	_, err = sqsinfo.ResolveQueueURL(ctx, api, "arn:aws:sqs:bad")
	assert.Error(t, err)
	_, err = sqsinfo.ResolveQueueURL(ctx, api, "")
	assert.Error(t, err)
}

func TestLimits(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 1048576, sqsinfo.MaxMessageBytes)
	assert.Equal(t, 1048576, sqsinfo.MaxBatchBytes)
	assert.Equal(t, 10, sqsinfo.MaxBatchEntries)
	assert.Equal(t, 10, sqsinfo.MaxMessageAttributes)
	assert.Equal(t, 12*time.Hour, sqsinfo.MaxVisibilityTimeout)
	assert.Equal(t, 20*time.Second, sqsinfo.MaxWaitTime)
	assert.Equal(t, 15*time.Minute, sqsinfo.MaxDelay)
}
