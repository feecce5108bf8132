package claimcheck_test

// The claim check's trust boundary and memory bound on the emulator (LocalStack or
// ElasticMQ SQS, moto S3): whoever may send to the queue is not trusted with the
// worker's S3 role.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
)

// countingS3 counts the S3 calls made through it and the payload bytes read from
// GetObject bodies.
type countingS3 struct {
	*s3.Client
	gets, deletes, read atomic.Int64
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func (c *countingS3) GetObject(ctx context.Context, input *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c.gets.Add(1)
	output, err := c.Client.GetObject(ctx, input, optFns...)
	if err == nil {
		output.Body = countingBody{output.Body, &c.read}
	}
	return output, err
}

func (c *countingS3) DeleteObject(ctx context.Context, input *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	c.deletes.Add(1)
	return c.Client.DeleteObject(ctx, input, optFns...)
}

// putObject writes body to bucket/key.
func putObject(t testing.TB, client *s3.Client, bucket, key, body string) claimcheck.Pointer {
	t.Helper()
	_, err := client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
	require.NoError(t, err, "PutObject %s/%s", bucket, key)
	return claimcheck.Pointer{Bucket: bucket, Key: key}
}

// sendPointer sends a plain SendMessage naming pointer, announcing size bytes: what
// anyone allowed to send to the queue can do.
func sendPointer(t *testing.T, client *sqs.Client, queueURL, body string, size string) {
	t.Helper()
	_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl:    aws.String(queueURL),
		MessageBody: aws.String(body),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			claimcheck.AttributePayloadSize: {DataType: aws.String("Number"), StringValue: aws.String(size)},
			sqsworker.AttributeJobType:      {DataType: aws.String("String"), StringValue: aws.String("resize")},
		},
	})
	require.NoError(t, err)
}

// deadLetters receives the n messages of the dead-letter queue, by their body.
func deadLetters(t *testing.T, client *sqs.Client, queueURL string, n int) map[string]sqstypes.Message {
	t.Helper()
	messages := testenv.Receive(t, client, sqs.ReceiveMessageInput{
		QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}, VisibilityTimeout: 600,
	}, n, patience)
	byBody := map[string]sqstypes.Message{}
	for _, message := range messages {
		byBody[aws.ToString(message.Body)] = message
	}
	require.Len(t, byBody, n)
	return byBody
}

// CASES.md N21 and issue 19 item 8: a plain SendMessage naming another bucket's object
// gave the handler that object, and the cleaner then deleted it. Each hostile pointer is
// dead-lettered after one receive with the reason, and no object is read or deleted.
func TestHostilePointersAreNeitherReadNorDeletedOnEmulator(t *testing.T) {
	t.Parallel()
	client, plain := testenv.SQS(t), s3Client(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	payloads, victims := newBucket(t, plain), newBucket(t, plain)
	allow := []claimcheck.Location{{Bucket: payloads, KeyPrefix: "jobs/"}}
	targets := []claimcheck.Pointer{
		putObject(t, plain, victims, "jobs/secret", "another bucket's object"),
		putObject(t, plain, payloads, "private/secret", "outside the prefix"),
		putObject(t, plain, payloads, "jobs-private/secret", "a prefix of the prefix"),
	}
	hostile := map[string]string{ // body: what it tries
		claimcheck.Pointer{Bucket: victims, Key: "jobs/secret"}.Body():                                               "foreign bucket",
		claimcheck.Pointer{Bucket: payloads, Key: "private/secret"}.Body():                                           "key outside the prefix",
		claimcheck.Pointer{Bucket: payloads, Key: "jobs-private/secret"}.Body():                                      "prefix without its slash",
		claimcheck.Pointer{Bucket: payloads, Key: "jobs/../private/secret"}.Body():                                   "dot-dot segment",
		claimcheck.Pointer{Bucket: payloads, Key: "jobs/%2e%2e/private/secret"}.Body():                               "percent-encoded dots",
		claimcheck.Pointer{Bucket: payloads, Key: "jobs%2F..%2Fprivate%2Fsecret"}.Body():                             "percent-encoded slashes",
		`{"s3BucketName": "` + victims + `", "s3Key": "jobs/secret"}`:                                                "foreign bucket, bare object shape",
		`["com.amazon.sqs.javamessaging.MessageS3Pointer",{"s3BucketName":"` + victims + `","s3Key":"jobs/secret"}]`: "foreign bucket, legacy class",
	}
	for body := range hostile {
		sendPointer(t, client, queue.URL, body, "23")
	}

	s3client := &countingS3{Client: plain}
	cleaner := newCleaner(t, plain)
	server := startPoller(t, client, s3client, cleaner, allow, poller.Config{QueueURL: queue.URL}, sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		t.Errorf("the handler ran with %.60q", m.Body)
		return nil
	}))
	testenv.Eventually(t, patience, "every hostile message dead-lettered", func() bool { return server.Stats().DeadLettered == int64(len(hostile)) })
	require.NoError(t, server.Shutdown(context.Background()))

	for body, dead := range deadLetters(t, client, queue.DeadLetterQueueURL, len(hostile)) {
		attributes := dead.MessageAttributes
		assert.Equal(t, claimcheck.ReasonPayloadNotAllowed, aws.ToString(attributes[sqsworker.AttributeFailureReason].StringValue), hostile[body])
		assert.Equal(t, "1", aws.ToString(attributes[sqsworker.AttributeFailureReceiveCount].StringValue), "%s: dead-lettered after one receive", hostile[body])
		assert.Contains(t, aws.ToString(attributes[sqsworker.AttributeFailureError].StringValue), "refused", hostile[body])
	}
	assert.Zero(t, s3client.gets.Load(), "no hostile pointer was read")
	assert.Zero(t, s3client.deletes.Load(), "no hostile pointer was deleted")
	assert.Equal(t, claimcheck.CleanerStats{}, cleaner.Stats())
	for _, target := range targets {
		assert.True(t, objectExists(t, plain, target), "%s is still there", target)
	}
}

// A message that announces less than its object, or a huge size, is refused before any
// byte of the object is read.
func TestLyingPayloadSizesAreRefusedBeforeReadingOnEmulator(t *testing.T) {
	t.Parallel()
	client, plain := testenv.SQS(t), s3Client(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	bucket := newBucket(t, plain)
	object := putObject(t, plain, bucket, "jobs/big", largeBody("big"))
	sendPointer(t, client, queue.URL, object.Body(), "10")                                                          // smaller than the object
	sendPointer(t, client, queue.URL, claimcheck.Pointer{Bucket: bucket, Key: "jobs/huge"}.Body(), "1099511627776") // 1 TiB

	s3client := &countingS3{Client: plain}
	server := startPoller(t, client, s3client, nil, []claimcheck.Location{{Bucket: bucket, KeyPrefix: "jobs/"}}, poller.Config{QueueURL: queue.URL}, sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		t.Errorf("the handler ran with %d bytes", len(m.Body))
		return nil
	}))
	testenv.Eventually(t, patience, "both dead-lettered", func() bool { return server.Stats().DeadLettered == 2 })
	require.NoError(t, server.Shutdown(context.Background()))

	dead := deadLetters(t, client, queue.DeadLetterQueueURL, 2)
	smaller := dead[object.Body()].MessageAttributes
	assert.Equal(t, claimcheck.ReasonPayloadSizeMismatch, aws.ToString(smaller[sqsworker.AttributeFailureReason].StringValue))
	assert.Contains(t, aws.ToString(smaller[sqsworker.AttributeFailureError].StringValue), "is 1048577 bytes (Content-Length), but the message announces 10; not read")
	huge := dead[claimcheck.Pointer{Bucket: bucket, Key: "jobs/huge"}.Body()].MessageAttributes
	assert.Equal(t, claimcheck.ReasonPayloadTooLarge, aws.ToString(huge[sqsworker.AttributeFailureReason].StringValue))
	assert.Contains(t, aws.ToString(huge[sqsworker.AttributeFailureError].StringValue), "announces 1099511627776 bytes, above the limit of 16777216")
	assert.Equal(t, int64(1), s3client.gets.Load(), "one GetObject: the huge size was refused without one")
	assert.Zero(t, s3client.read.Load(), "no byte of the object was read")
	assert.True(t, objectExists(t, plain, object))
}

// Ten deliveries of 1 MiB payloads at once, with a budget of two: never more than two
// payloads are held, the others wait, and all ten are handled.
func TestConcurrentPayloadsShareOneByteBudgetOnEmulator(t *testing.T) {
	t.Parallel()
	client, s3client := testenv.SQS(t), s3Client(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: patience})
	jobs, store := jobProducer(t, client, s3client)
	const payloads = 10
	size := int64(len(largeBody("j-00")))
	for i := range payloads {
		sendOffloaded(t, jobs, store, queue.URL, largeBody(fmt.Sprintf("j-%02d", i)))
	}

	resolver := newResolver(t, s3client, claimcheck.ResolverConfig{
		Allow: []claimcheck.Location{store.Location()}, MaxPayloadSize: size, MaxBufferedBytes: 2 * size,
	})
	var inside, most atomic.Int64
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	handler := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		n := inside.Add(1)
		for {
			seen := most.Load()
			if n <= seen || most.CompareAndSwap(seen, n) {
				break
			}
		}
		<-release
		inside.Add(-1)
		return nil
	})
	server, err := poller.New(client, poller.Config{QueueURL: queue.URL, Concurrency: payloads, WaitTime: time.Second}, sqsworker.Chain(handler, resolver.Middleware()))
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() { _ = server.Shutdown(context.Background()) })

	testenv.Eventually(t, patience, "every delivery holding a payload or waiting for the budget (or a third payload held)", func() bool {
		return inside.Load()+resolver.Stats().Waiting == payloads || most.Load() > 2
	})
	assert.Equal(t, int64(2), most.Load(), "payloads held at once")
	assert.Equal(t, int64(payloads-2), resolver.Stats().Waiting)
	assert.Equal(t, 2*size, resolver.Stats().Buffered)
	once.Do(func() { close(release) })
	testenv.Eventually(t, patience, "all ten handled and deleted", func() bool { return server.Stats().Deleted == payloads })
	assert.Equal(t, int64(2), most.Load(), "never more than two at once")
	assert.Equal(t, claimcheck.ResolverStats{Resolved: payloads}, resolver.Stats())
}

// A NoSuchKey with DiscardOrphaned: the handler never runs, the message is deleted, not
// dead-lettered, and counted.
func TestOrphanedPointerIsDiscardedWhenAskedOnEmulator(t *testing.T) {
	t.Parallel()
	client, s3client := testenv.SQS(t), s3Client(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	bucket := newBucket(t, s3client)
	sendPointer(t, client, queue.URL, claimcheck.Pointer{Bucket: bucket, Key: "jobs/deleted"}.Body(), "10")

	resolver := newResolver(t, s3client, claimcheck.ResolverConfig{Allow: []claimcheck.Location{{Bucket: bucket, KeyPrefix: "jobs/"}}, DiscardOrphaned: true})
	server, err := poller.New(client, poller.Config{QueueURL: queue.URL, WaitTime: time.Second}, sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		t.Error("the handler must not run without its payload")
		return nil
	}), resolver.Middleware()))
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() { _ = server.Shutdown(context.Background()) })

	testenv.Eventually(t, patience, "the orphan deleted", func() bool { return server.Stats().Deleted == 1 })
	require.NoError(t, server.Shutdown(context.Background()))
	assert.Equal(t, claimcheck.ResolverStats{NotFound: 1, Orphaned: 1}, resolver.Stats())
	assert.Zero(t, server.Stats().DeadLettered)
	for _, url := range []string{queue.URL, queue.DeadLetterQueueURL} {
		visible, inFlight := testenv.Counts(t, client, url)
		assert.Zero(t, visible+inFlight, url)
	}
}
