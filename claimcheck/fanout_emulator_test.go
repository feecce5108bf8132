package claimcheck_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
)

// snsClients returns an SNS client and an SQS client on the same LocalStack
// (AWS_ENDPOINT_URL_SNS): SNS delivers to LocalStack's queues only, so on the ElasticMQ
// lane this test's queues are LocalStack's too.
func snsClients(t *testing.T) (*sns.Client, *sqs.Client) {
	t.Helper()
	config := testenv.AWSConfig(t)
	endpoint := os.Getenv("AWS_ENDPOINT_URL_SNS")
	if endpoint == "" {
		t.Fatal("AWS_ENDPOINT_URL_SNS is not set; run the tests with `make test`, which sets it from localstack/env")
	}
	topics := sns.NewFromConfig(config)
	if _, err := topics.ListTopics(context.Background(), &sns.ListTopicsInput{}); err != nil {
		t.Fatalf("SNS at %s does not answer (LocalStack started without SERVICES=sqs,sns? restart it: localstack/down && localstack/up): %v", endpoint, err)
	}
	return topics, sqs.NewFromConfig(config, func(o *sqs.Options) { o.BaseEndpoint = &endpoint })
}

// subscribe subscribes queue to topic with raw message delivery and the queue policy
// that lets the topic send.
func subscribe(t *testing.T, topics *sns.Client, queues *sqs.Client, topicARN string, queue testenv.Queue) {
	t.Helper()
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` +
		queue.ARN + `","Condition":{"ArnEquals":{"aws:SourceArn":"` + topicARN + `"}}}]}`
	_, err := queues.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(queue.URL), Attributes: map[string]string{"Policy": policy}})
	require.NoError(t, err)
	_, err = topics.Subscribe(context.Background(), &sns.SubscribeInput{
		TopicArn: aws.String(topicARN), Protocol: aws.String("sqs"), Endpoint: aws.String(queue.ARN),
		Attributes: map[string]string{"RawMessageDelivery": "true"},
	})
	require.NoError(t, err)
}

// snsAttributes converts the store's SQS message attributes for sns:Publish.
func snsAttributes(attributes map[string]sqstypes.MessageAttributeValue) map[string]snstypes.MessageAttributeValue {
	out := make(map[string]snstypes.MessageAttributeValue, len(attributes))
	for name, value := range attributes {
		out[name] = snstypes.MessageAttributeValue{DataType: value.DataType, StringValue: value.StringValue, BinaryValue: value.BinaryValue}
	}
	return out
}

// CASES.md N21 (a): a 2 MiB job published to a topic with two subscribed queues. The
// store marks the pointer shared (the destination is a topic ARN), both workers handle
// it once, the second after the first has deleted its message, and neither deletes the
// object (the bucket's lifecycle rule does).
func TestFanOutThroughSNSKeepsTheSharedPayloadOnEmulator(t *testing.T) {
	t.Parallel()
	topics, queues := snsClients(t)
	s3client := s3Client(t)
	topic, err := topics.CreateTopic(context.Background(), &sns.CreateTopicInput{Name: aws.String(testenv.UniqueName(t))})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = topics.DeleteTopic(context.Background(), &sns.DeleteTopicInput{TopicArn: topic.TopicArn})
	})
	q1 := testenv.NewQueue(t, queues, testenv.QueueOptions{})
	q2 := testenv.NewQueue(t, queues, testenv.QueueOptions{})
	subscribe(t, topics, queues, *topic.TopicArn, q1)
	subscribe(t, topics, queues, *topic.TopicArn, q2)

	store, err := claimcheck.NewStore(s3client, claimcheck.Config{Bucket: newBucket(t, s3client), KeyPrefix: "fanout/"})
	require.NoError(t, err)
	body := `{"jobId":"fan-1","data":"` + strings.Repeat("x", 2<<20) + `"}`
	pointerBody, attributes, err := store.Offload(context.Background(), *topic.TopicArn, body, map[string]sqstypes.MessageAttributeValue{
		sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String("resize")},
	})
	require.NoError(t, err)
	assert.Equal(t, "1", aws.ToString(attributes[claimcheck.AttributePayloadShared].StringValue), "a topic's pointer is shared")
	_, err = topics.Publish(context.Background(), &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String(pointerBody), MessageAttributes: snsAttributes(attributes)})
	require.NoError(t, err)
	pointer, err := claimcheck.ParsePointer(pointerBody)
	require.NoError(t, err)

	cleaner := newCleaner(t, s3client)
	worker := func(queue testenv.Queue, calls *handled) *poller.Server {
		return startPoller(t, queues, s3client, cleaner, []claimcheck.Location{store.Location()}, poller.Config{QueueURL: queue.URL}, sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
			calls.add(m)
			return nil
		}))
	}
	var first, second handled
	one := worker(q1, &first)
	testenv.Eventually(t, patience, "q1's worker handled the job and deleted its message", func() bool { return one.Stats().Deleted == 1 })
	require.NoError(t, one.Shutdown(context.Background()))
	require.NoError(t, cleaner.Shutdown(context.Background())) // every delete the first worker caused is done
	assert.True(t, objectExists(t, s3client, pointer), "the first consumer left the shared payload")
	assert.Equal(t, claimcheck.CleanerStats{Shared: 1}, cleaner.Stats())

	cleaner = newCleaner(t, s3client)
	two := worker(q2, &second)
	testenv.Eventually(t, patience, "q2's worker handled the job too", func() bool { return two.Stats().Deleted == 1 })
	require.NoError(t, two.Shutdown(context.Background()))
	require.NoError(t, cleaner.Shutdown(context.Background()))

	for name, calls := range map[string]*handled{"q1": &first, "q2": &second} {
		got := calls.all()
		require.Len(t, got, 1, "%s handled the job once", name)
		assert.True(t, got[0].body == body, "%s got the 2 MiB payload", name)
		assert.NotContains(t, got[0].attributes, claimcheck.AttributePayloadShared)
		assert.Equal(t, "resize", got[0].attributes[sqsworker.AttributeJobType].StringValue)
	}
	assert.Equal(t, claimcheck.CleanerStats{Shared: 1}, cleaner.Stats(), "the second consumer did not delete it either")
	assert.True(t, objectExists(t, s3client, pointer), "the shared payload is left to the bucket's lifecycle rule")
}
