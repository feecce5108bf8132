package outboxdynamo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo/dynamostream"
	"github.com/sqsworker/sqsworker/outbox/outboxtest"
	"github.com/sqsworker/sqsworker/producer"
)

// streamEvent reads every record of the outbox table's stream (moto serves DynamoDB
// Streams) and returns them as the event Lambda would deliver.
func streamEvent(t *testing.T, table string, want int) events.DynamoDBEvent {
	t.Helper()
	ctx := context.Background()
	cfg := testenv.AWSConfig(t)
	streams := dynamodbstreams.NewFromConfig(cfg)
	described, err := testenv.DynamoDB(t).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	require.NoError(t, err)
	streamARN := aws.ToString(described.Table.LatestStreamArn)
	require.NotEmpty(t, streamARN, "the outbox table has a stream")
	var event events.DynamoDBEvent
	deadline := time.Now().Add(20 * time.Second)
	for len(event.Records) < want {
		require.True(t, time.Now().Before(deadline), "read %d of %d stream records", len(event.Records), want)
		event.Records = nil
		stream, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN)})
		require.NoError(t, err)
		for _, shard := range stream.StreamDescription.Shards {
			iterator, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
				StreamArn: aws.String(streamARN), ShardId: shard.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
			})
			require.NoError(t, err)
			records, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iterator.ShardIterator})
			require.NoError(t, err)
			for _, r := range records.Records {
				event.Records = append(event.Records, toEventRecord(r))
			}
		}
	}
	return event
}

func toEventRecord(r streamtypes.Record) events.DynamoDBEventRecord {
	image := map[string]events.DynamoDBAttributeValue{}
	for name, value := range r.Dynamodb.NewImage {
		switch v := value.(type) {
		case *streamtypes.AttributeValueMemberS:
			image[name] = events.NewStringAttribute(v.Value)
		case *streamtypes.AttributeValueMemberN:
			image[name] = events.NewNumberAttribute(v.Value)
		}
	}
	return events.DynamoDBEventRecord{
		EventID: aws.ToString(r.EventID), EventName: string(r.EventName), EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{SequenceNumber: aws.ToString(r.Dynamodb.SequenceNumber), NewImage: image,
			StreamViewType: string(r.Dynamodb.StreamViewType)},
	}
}

func TestStreamHandlerPublishesNewEntriesAndRemovesThem(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	h := newDynamoSuite(t)
	h.Rollback(t, queue.URL, outboxtest.Job(9))
	entries := h.Commit(t, queue.URL, outboxtest.Job(1), outboxtest.Job(2), outboxtest.Job(3))
	event := streamEvent(t, h.outbox.Table(), 3)
	require.Len(t, event.Records, 3, "the rolled-back transaction wrote no record")

	observed := &outboxtest.Recorder{}
	handler, err := dynamostream.New(h.client, h.outbox, outboxtest.NewProducer(t, client), observed)
	require.NoError(t, err)
	response, err := handler.Handle(context.Background(), event)
	require.NoError(t, err)
	assert.Empty(t, response.BatchItemFailures)
	got := outboxtest.Drain(t, client, queue.URL, 3, 20*time.Second)
	assert.ElementsMatch(t, outboxtest.IDs(entries), []string{outboxtest.OutboxID(got[0]), outboxtest.OutboxID(got[1]), outboxtest.OutboxID(got[2])})
	assert.Empty(t, h.Pending(t), "published entries are deleted")
	assert.Len(t, observed.Kinds(outbox.EventPublished), 3)

	// The deletes appear in the stream as REMOVE records; a batch of them publishes nothing.
	all := streamEvent(t, h.outbox.Table(), 6)
	var removes []events.DynamoDBEventRecord
	for _, r := range all.Records {
		if r.EventName == string(events.DynamoDBOperationTypeRemove) {
			removes = append(removes, r)
		}
	}
	require.Len(t, removes, 3)
	response, err = handler.Handle(context.Background(), events2(removes))
	require.NoError(t, err)
	assert.Empty(t, response.BatchItemFailures)
	assert.Len(t, observed.Kinds(outbox.EventPublished), 3)
	testenv.WaitQueueEmpty(t, client, queue.URL, 15*time.Second)
}

func events2(records []events.DynamoDBEventRecord) events.DynamoDBEvent {
	return events.DynamoDBEvent{Records: records}
}

// failingSQS fails every SendMessageBatch call (a network failure): the records are
// reported as batch item failures and the entries stay.
type failingSQS struct{ *sqs.Client }

func (f failingSQS) SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	return nil, errors.New("connection reset by peer")
}

func TestStreamHandlerReportsUnsentRecordsAsBatchItemFailures(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	h := newDynamoSuite(t)
	entries := h.Commit(t, queue.URL, outboxtest.Job(1), outboxtest.Job(2))
	event := streamEvent(t, h.outbox.Table(), 2)

	handler, err := dynamostream.New(h.client, h.outbox, outboxtest.NewProducer(t, failingSQS{client}), nil)
	require.NoError(t, err)
	response, err := handler.Handle(context.Background(), event)
	require.NoError(t, err)
	var failed []string
	for _, f := range response.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	// One record: the first unsent one, from which Lambda retries (reporting the later
	// ones too would change nothing).
	assert.Equal(t, []string{event.Records[0].Change.SequenceNumber}, failed)
	assert.ElementsMatch(t, outboxtest.IDs(entries), h.Pending(t), "unsent entries stay")

	// Lambda's retry of the batch, with SQS back, publishes them.
	handler, err = dynamostream.New(h.client, h.outbox, outboxtest.NewProducer(t, client), nil)
	require.NoError(t, err)
	response, err = handler.Handle(context.Background(), event)
	require.NoError(t, err)
	assert.Empty(t, response.BatchItemFailures)
	outboxtest.Drain(t, client, queue.URL, 2, 20*time.Second)
	assert.Empty(t, h.Pending(t))
}

// A sharded index: the relay reads every shard, and the backlog counts them all.
func TestDynamoDBRelayReadsEveryShard(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	db := testenv.DynamoDB(t)
	o := newTable(t, db, outboxdynamo.Config{Shards: 4})
	jobs := make([]producer.Job, 40)
	for i := range jobs {
		jobs[i] = outboxtest.Job(i)
	}
	items, entries, err := o.TransactItems(nil, queue.URL, jobs...)
	require.NoError(t, err)
	_, err = db.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: items})
	require.NoError(t, err)
	backlog, lag, err := o.Backlog(context.Background(), db)
	require.NoError(t, err)
	assert.Equal(t, 40, backlog)
	assert.Positive(t, lag)

	r, err := outboxdynamo.NewRelay(db, o, outboxtest.NewProducer(t, client), outbox.RelayConfig{PollInterval: 50 * time.Millisecond, BatchSize: 15})
	require.NoError(t, err)
	outboxtest.StartRelay(t, r)
	got := outboxtest.Drain(t, client, queue.URL, 40, 30*time.Second)
	var published []string
	for _, m := range got {
		published = append(published, outboxtest.OutboxID(m))
	}
	assert.ElementsMatch(t, outboxtest.IDs(entries), published)
	outboxtest.PublishedExactly(t, 40, r)
	testenv.Eventually(t, 10*time.Second, "backlog 0", func() bool {
		n, _, err := o.Backlog(context.Background(), db)
		return err == nil && n == 0
	})
}
