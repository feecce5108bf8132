package claimcheck_test

// Tests on the local emulator: SQS on LocalStack, S3 on moto (AWS_ENDPOINT_URL_S3 from
// localstack/env). Each runs in parallel with the others on its own queues and bucket.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/esmtest"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/lambda/localesm"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/redrive"
)

// patience bounds every wait for the emulator. The tests take seconds, but the
// emulator is shared by every test run on the machine and serves moto one request at a
// time: under load it was seen answering one request every 5 to 10 s for minutes, and a
// test that would pass must not fail then. A wait ends as soon as its condition holds.
const patience = 3 * time.Minute

// largeBody is a JSON job of exactly 1 MiB + 1 byte: one byte more than SQS accepts.
func largeBody(id string) string {
	prefix := `{"jobId":"` + id + `","data":"`
	suffix := `"}`
	return prefix + strings.Repeat("x", 1<<20+1-len(prefix)-len(suffix)) + suffix
}

// s3Client returns an S3 client for the emulator, failing the test when
// AWS_ENDPOINT_URL_S3 is not set. Path-style addressing: the emulator is reached by IP
// address (where the SDK uses path-style anyway), or by a host name such as localhost,
// under which "<bucket>.localhost" does not resolve.
func s3Client(t testing.TB) *s3.Client {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL_S3") == "" {
		t.Fatal("AWS_ENDPOINT_URL_S3 is not set; run the tests with `make test`, which starts the emulator (localstack/up) and sets it from localstack/env")
	}
	return s3.NewFromConfig(testenv.AWSConfig(t), func(o *s3.Options) { o.UsePathStyle = true })
}

// newBucket creates a uniquely named bucket for this test and removes it, objects
// first, when the test ends.
func newBucket(t testing.TB, client *s3.Client) string {
	t.Helper()
	name := strings.ToLower(testenv.UniqueName(t))
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, key := range objectKeys(t, client, name) {
			_, _ = client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String(key)})
		}
		_, _ = client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
	})
	return name
}

// objectKeys lists the bucket's keys.
func objectKeys(t testing.TB, client *s3.Client, bucket string) []string {
	t.Helper()
	output, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Errorf("listing bucket %s: %v", bucket, err)
		return nil
	}
	keys := make([]string, 0, len(output.Contents))
	for _, object := range output.Contents {
		keys = append(keys, aws.ToString(object.Key))
	}
	return keys
}

// objectExists reports whether the pointer's object is in S3 (HeadObject).
func objectExists(t *testing.T, client *s3.Client, pointer claimcheck.Pointer) bool {
	t.Helper()
	_, err := client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(pointer.Bucket), Key: aws.String(pointer.Key)})
	if err == nil {
		return true
	}
	var notFound *s3types.NotFound
	if !errors.As(err, &notFound) {
		t.Errorf("HeadObject %s: %v", pointer, err) // Errorf: handlers call it from their goroutines
	}
	return false
}

// recordingStore is the store as the producer's PayloadStore, recording the pointers it
// returned.
type recordingStore struct {
	*claimcheck.Store
	mu       sync.Mutex
	pointers []claimcheck.Pointer
}

func (r *recordingStore) Offload(ctx context.Context, queueURL, body string, attributes map[string]sqstypes.MessageAttributeValue) (string, map[string]sqstypes.MessageAttributeValue, error) {
	newBody, newAttributes, err := r.Store.Offload(ctx, queueURL, body, attributes)
	if err == nil {
		pointer, parseErr := claimcheck.ParsePointer(newBody)
		if parseErr != nil {
			return "", nil, parseErr
		}
		r.mu.Lock()
		r.pointers = append(r.pointers, pointer)
		r.mu.Unlock()
	}
	return newBody, newAttributes, err
}

func (r *recordingStore) last() claimcheck.Pointer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pointers[len(r.pointers)-1]
}

// jobProducer returns a producer whose PayloadStore is a store writing to a new bucket
// of this test.
func jobProducer(t *testing.T, client *sqs.Client, s3client *s3.Client) (*producer.Producer, *recordingStore) {
	t.Helper()
	store, err := claimcheck.NewStore(s3client, claimcheck.Config{Bucket: newBucket(t, s3client), KeyPrefix: "jobs/"})
	require.NoError(t, err)
	recording := &recordingStore{Store: store}
	jobs, err := producer.New(client, producer.Config{PayloadStore: recording})
	require.NoError(t, err)
	return jobs, recording
}

// sendOffloaded sends body as a "resize" job through the producer and returns the
// pointer the store sent in its place.
func sendOffloaded(t *testing.T, jobs *producer.Producer, store *recordingStore, queueURL, body string) claimcheck.Pointer {
	t.Helper()
	_, err := jobs.Send(context.Background(), queueURL, producer.Job{Type: "resize", Body: body})
	require.NoError(t, err)
	return store.last()
}

// handled records what handlers saw.
type handled struct {
	mu    sync.Mutex
	calls []handledCall
}

type handledCall struct {
	id, body     string
	attributes   map[string]sqsworker.MessageAttribute
	receiveCount int
}

func (h *handled) add(m *sqsworker.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, handledCall{m.ID, m.Body, m.MessageAttributes, m.ReceiveCount})
}

func (h *handled) all() []handledCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]handledCall(nil), h.calls...)
}

// newResolver returns a resolver reading with s3client.
func newResolver(t *testing.T, s3client claimcheck.S3API, config claimcheck.ResolverConfig) *claimcheck.Resolver {
	t.Helper()
	resolver, err := claimcheck.NewResolver(s3client, config)
	require.NoError(t, err)
	return resolver
}

// startPoller runs a poller on client with handler behind the resolver's middleware
// (allowing the locations allow) and cleaner (the resolver's Cleaner and the poller's
// Observer; nil for none), and stops it when the test ends.
func startPoller(t *testing.T, client poller.API, s3client claimcheck.S3API, cleaner *claimcheck.Cleaner, allow []claimcheck.Location, config poller.Config, handler sqsworker.Handler) *poller.Server {
	t.Helper()
	config.WaitTime = time.Second
	if cleaner != nil {
		config.Observer = cleaner
	}
	resolver := newResolver(t, s3client, claimcheck.ResolverConfig{Allow: allow, Cleaner: cleaner})
	server, err := poller.New(client, config, sqsworker.Chain(handler, resolver.Middleware()))
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
	return server
}

// newCleaner returns a cleaner shut down when the test ends.
func newCleaner(t *testing.T, s3client *s3.Client) *claimcheck.Cleaner {
	t.Helper()
	cleaner := claimcheck.NewCleaner(s3client, claimcheck.CleanerConfig{})
	t.Cleanup(func() { _ = cleaner.Shutdown(context.Background()) })
	return cleaner
}

// receiveOne receives the one message of queueURL, waiting up to patience.
func receiveOne(t *testing.T, client *sqs.Client, queueURL string) sqstypes.Message {
	t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		output, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(queueURL),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			WaitTimeSeconds:             2,
		})
		require.NoError(t, err)
		if len(output.Messages) > 0 {
			require.Len(t, output.Messages, 1)
			return output.Messages[0]
		}
	}
	t.Fatalf("no message in %s within %s", queueURL, patience)
	return sqstypes.Message{}
}

func TestLargeJobRoundTripsThroughS3OnEmulator(t *testing.T) {
	t.Parallel()
	testenv.SkipOn(t, testenv.ElasticMQIgnoresSizeAndRetention) // the test sets or reads MaximumMessageSize
	client, s3client := testenv.SQS(t), s3Client(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	require.NoError(t, setMaximumMessageSize(client, queue.URL, 1<<20))
	body := largeBody("j-1")
	require.Equal(t, 1<<20+1, len(body))

	withoutS3, err := producer.New(client, producer.Config{})
	require.NoError(t, err)
	_, err = withoutS3.Send(context.Background(), queue.URL, producer.Job{Type: "resize", Body: body})
	var tooLarge *producer.TooLargeError
	require.ErrorAs(t, err, &tooLarge, "without S3 the job is refused with the size error")
	assert.Greater(t, tooLarge.Size, 1<<20+1)
	assert.Equal(t, 1<<20, tooLarge.Limit)

	jobs, store := jobProducer(t, client, s3client)
	pointer := sendOffloaded(t, jobs, store, queue.URL, body)
	require.True(t, objectExists(t, s3client, pointer))

	var calls handled
	cleaner := newCleaner(t, s3client)
	server := startPoller(t, client, s3client, cleaner, []claimcheck.Location{store.Location()}, poller.Config{QueueURL: queue.URL}, sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		calls.add(m)
		return nil
	}))
	testenv.Eventually(t, patience, "the job handled, its delete confirmed and its payload deleted", func() bool {
		return server.Stats().Deleted == 1 && cleaner.Stats().Deleted == 1
	})

	got := calls.all()
	require.Len(t, got, 1)
	assert.True(t, got[0].body == body, "the handler got the 1 MiB + 1 byte body (%d bytes)", len(got[0].body))
	assert.NotContains(t, got[0].attributes, claimcheck.AttributePayloadSize)
	assert.Equal(t, "resize", got[0].attributes[sqsworker.AttributeJobType].StringValue)
	visible, inFlight := testenv.Counts(t, client, queue.URL)
	assert.Zero(t, visible+inFlight)
	assert.False(t, objectExists(t, s3client, pointer), "the handled message's payload is gone")
	assert.Equal(t, claimcheck.CleanerStats{Deleted: 1}, cleaner.Stats())
}

// setMaximumMessageSize sets the queue's MaximumMessageSize (bytes).
func setMaximumMessageSize(client *sqs.Client, queueURL string, size int) error {
	_, err := client.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(queueURL),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameMaximumMessageSize): strconv.Itoa(size)},
	})
	return err
}

func TestDeadLetteredJobKeepsAResolvablePointerThroughARedriveOnEmulator(t *testing.T) {
	t.Parallel()
	client, s3client := testenv.SQS(t), s3Client(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	jobs, store := jobProducer(t, client, s3client)
	body := largeBody("j-2")
	pointer := sendOffloaded(t, jobs, store, queue.URL, body)

	var calls handled
	var failing atomic.Bool
	failing.Store(true)
	cleaner := newCleaner(t, s3client)
	server := startPoller(t, client, s3client, cleaner, []claimcheck.Location{store.Location()}, poller.Config{QueueURL: queue.URL}, sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		calls.add(m)
		if failing.Load() {
			return sqsworker.Permanent("Broken", errors.New("the job is broken"))
		}
		return nil
	}))
	testenv.Eventually(t, patience, "the job dead-lettered and deleted from the source", func() bool {
		return server.Stats().DeadLettered == 1 && server.Stats().Deleted == 1
	})
	require.NoError(t, server.Shutdown(context.Background()))
	assert.Equal(t, claimcheck.CleanerStats{}, cleaner.Stats(), "the cleaner was told of the settlement and deleted nothing")

	dead := receiveOne(t, client, queue.DeadLetterQueueURL)
	deadPointer, err := claimcheck.ParsePointer(aws.ToString(dead.Body))
	require.NoError(t, err, "the dead-letter queue's copy is the pointer, not the payload")
	assert.Equal(t, pointer, deadPointer)
	assert.Equal(t, "1048577", aws.ToString(dead.MessageAttributes[claimcheck.AttributePayloadSize].StringValue))
	assert.Equal(t, "Broken", aws.ToString(dead.MessageAttributes[sqsworker.AttributeFailureReason].StringValue))
	assert.True(t, objectExists(t, s3client, pointer), "a dead-lettered message's payload is kept")
	_, err = client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(queue.DeadLetterQueueURL), ReceiptHandle: dead.ReceiptHandle, VisibilityTimeout: 0,
	})
	require.NoError(t, err)

	mover, err := redrive.NewMover(client, redrive.Config{Source: queue.DeadLetterQueueURL, Destination: queue.URL})
	require.NoError(t, err)
	result, err := mover.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, result.Moved)

	failing.Store(false)
	again := startPoller(t, client, s3client, cleaner, []claimcheck.Location{store.Location()}, poller.Config{QueueURL: queue.URL}, sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		calls.add(m)
		return nil
	}))
	testenv.Eventually(t, patience, "the redriven job handled and its payload deleted", func() bool {
		return again.Stats().Deleted == 1 && cleaner.Stats().Deleted == 1
	})
	got := calls.all()
	require.Len(t, got, 2)
	assert.True(t, got[0].body == body && got[1].body == body, "both deliveries resolved the payload")
	assert.False(t, objectExists(t, s3client, pointer), "handled after the redrive: the payload is gone")
}

func TestMissingPayloadIsDeadLetteredAfterOneReceiveOnEmulator(t *testing.T) {
	t.Parallel()
	client, s3client := testenv.SQS(t), s3Client(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	bucket := newBucket(t, s3client)
	missing := claimcheck.Pointer{Bucket: bucket, Key: "never-written"}
	_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl:    aws.String(queue.URL),
		MessageBody: aws.String(missing.Body()),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			claimcheck.AttributePayloadSize: {DataType: aws.String("Number"), StringValue: aws.String("10")},
		},
	})
	require.NoError(t, err)

	server := startPoller(t, client, s3client, nil, []claimcheck.Location{{Bucket: bucket}}, poller.Config{QueueURL: queue.URL}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		t.Error("the handler must not run without its payload")
		return nil
	}))
	testenv.Eventually(t, patience, "the message dead-lettered", func() bool { return server.Stats().DeadLettered == 1 })

	dead := receiveOne(t, client, queue.DeadLetterQueueURL)
	assert.Equal(t, claimcheck.ReasonPayloadNotFound, aws.ToString(dead.MessageAttributes[sqsworker.AttributeFailureReason].StringValue))
	assert.Contains(t, aws.ToString(dead.MessageAttributes[sqsworker.AttributeFailureError].StringValue), "s3://"+bucket+"/never-written")
	assert.Equal(t, "1", aws.ToString(dead.MessageAttributes[sqsworker.AttributeFailureReceiveCount].StringValue))
	assert.Equal(t, missing.Body(), aws.ToString(dead.Body))
}

// lambdaFunction serves the Lambda host's batch handler as an Invoke endpoint for the
// local event source mapping (lambda/localesm), in process: the same handler a function
// binary would run, without the Runtime Interface Emulator.
func lambdaFunction(t *testing.T, handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) string {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var event events.SQSEvent
		if err := json.NewDecoder(r.Body).Decode(&event); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), patience)
		defer cancel()
		response, err := handle(ctx, event)
		if err != nil {
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			_ = json.NewEncoder(w).Encode(map[string]string{"errorType": "BatchError", "errorMessage": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(response)
	}))
	t.Cleanup(server.Close)
	return server.URL
}

func TestLambdaHostResolvesPointersAndDeadLettersThePointerOnEmulator(t *testing.T) {
	t.Parallel()
	client, s3client := testenv.SQS(t), s3Client(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: patience}) // never visible again during a slow invocation
	jobs, store := jobProducer(t, client, s3client)
	good, bad := largeBody("good"), largeBody("bad")
	goodPointer := sendOffloaded(t, jobs, store, queue.URL, good)
	badPointer := sendOffloaded(t, jobs, store, queue.URL, bad)

	var calls handled
	cleaner := claimcheck.NewCleaner(s3client, claimcheck.CleanerConfig{})
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		calls.add(m)
		if m.Body == bad {
			return sqsworker.Permanent("Broken", nil)
		}
		return nil
	}), newResolver(t, s3client, claimcheck.ResolverConfig{Allow: []claimcheck.Location{store.Location()}, Cleaner: cleaner}).Middleware())
	batch, err := lambda.NewBatchHandler(handler, lambda.WithSQSClient(client), lambda.WithObserver(cleaner))
	if err != nil {
		t.Fatal(err)
	}
	function := lambdaFunction(t, batch.Handle)
	esmtest.Run(t, client, localesm.Config{QueueURL: queue.URL, FunctionURLs: []string{function}, ReportBatchItemFailures: true, WaitTime: time.Second})

	testenv.Eventually(t, patience, "both records deleted by the mapping", func() bool {
		visible, inFlight := testenv.Counts(t, client, queue.URL)
		return len(calls.all()) == 2 && visible+inFlight == 0
	})
	bodies := map[string]bool{}
	for _, call := range calls.all() {
		bodies[call.body] = true
		assert.NotContains(t, call.attributes, claimcheck.AttributePayloadSize)
	}
	assert.True(t, bodies[good] && bodies[bad], "the Lambda host's handler got both payloads")
	dead := receiveOne(t, client, queue.DeadLetterQueueURL)
	deadPointer, err := claimcheck.ParsePointer(aws.ToString(dead.Body))
	require.NoError(t, err)
	assert.Equal(t, badPointer, deadPointer)
	assert.True(t, objectExists(t, s3client, badPointer))
	require.NoError(t, cleaner.Shutdown(context.Background()))
	assert.Equal(t, claimcheck.CleanerStats{}, cleaner.Stats(), "the function never sees the mapping's delete, so the cleaner deletes nothing on Lambda")
	assert.True(t, objectExists(t, s3client, goodPointer), "on Lambda the lifecycle rule expires handled payloads")
}

func TestResentJobSharesOnePayloadAndItsDuplicateIsSuppressedOnEmulator(t *testing.T) {
	t.Parallel()
	client, s3client := testenv.SQS(t), s3Client(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	table := testenv.NewTable(t, testenv.DynamoDB(t))
	jobs, store := jobProducer(t, client, s3client)
	body := largeBody("j-3")
	job := producer.Job{Type: "resize", Body: body, IdempotencyKey: "order-3"}
	for range 2 { // the producer sent the job twice (a retried send whose first response was lost)
		_, err := jobs.Send(context.Background(), queue.URL, job)
		require.NoError(t, err)
	}
	require.Len(t, store.pointers, 2)
	require.Equal(t, store.pointers[0], store.pointers[1], "both sends carry the same pointer")

	var calls handled
	cleaner := newCleaner(t, s3client)
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		calls.add(m)
		return nil
	}), newResolver(t, s3client, claimcheck.ResolverConfig{Allow: []claimcheck.Location{store.Location()}, Cleaner: cleaner}).Middleware())
	// Idempotency outside the claim check: a duplicate is suppressed before its payload
	// is read, and its payload hash (of the pointer body) matches.
	handler = sqsworker.Chain(handler, idempotency.Middleware(idempotency.NewDynamoDBStore(testenv.DynamoDB(t), table), idempotency.Config{}))
	server, err := poller.New(client, poller.Config{QueueURL: queue.URL, WaitTime: time.Second, Concurrency: 1, Observer: cleaner}, handler)
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() { _ = server.Shutdown(context.Background()) })

	testenv.Eventually(t, patience, "both copies deleted, and the payload once", func() bool {
		return server.Stats().Deleted == 2 && cleaner.Stats().Deleted == 1
	})
	require.Len(t, calls.all(), 1, "the job ran once")
	assert.True(t, calls.all()[0].body == body)
	assert.Zero(t, server.Stats().DeadLettered, "the duplicate is not a payload mismatch")
	assert.False(t, objectExists(t, s3client, store.pointers[0]))
	assert.Equal(t, claimcheck.CleanerStats{Deleted: 1}, cleaner.Stats(), "the suppressed copy deleted nothing and left nothing tracked")
}

// failingDeletes fails every entry of the first DeleteMessageBatch call (sender fault,
// so the poller gives up at once and the message is delivered again), then passes calls
// through to SQS.
type failingDeletes struct {
	*sqs.Client
	failed atomic.Bool
}

func (f *failingDeletes) DeleteMessageBatch(ctx context.Context, input *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if f.failed.CompareAndSwap(false, true) {
		output := &sqs.DeleteMessageBatchOutput{}
		for _, entry := range input.Entries {
			output.Failed = append(output.Failed, sqstypes.BatchResultErrorEntry{
				Id: entry.Id, Code: aws.String("InjectedFailure"), Message: aws.String("the test failed this entry"), SenderFault: true,
			})
		}
		return output, nil
	}
	return f.Client.DeleteMessageBatch(ctx, input, optFns...)
}

// TestFailedBatchDeleteKeepsThePayloadOnEmulator is co-go/sqs-extended-client-go#150 the
// other way round: when the DeleteMessageBatch entry of a handled message fails, its
// payload stays, and the message, delivered again, still resolves.
func TestFailedBatchDeleteKeepsThePayloadOnEmulator(t *testing.T) {
	t.Parallel()
	client, s3client := testenv.SQS(t), s3Client(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 2 * time.Second})
	jobs, store := jobProducer(t, client, s3client)
	body := largeBody("j-4")
	pointer := sendOffloaded(t, jobs, store, queue.URL, body)

	var calls handled
	cleaner := newCleaner(t, s3client)
	api := &failingDeletes{Client: client}
	server := startPoller(t, api, s3client, cleaner, []claimcheck.Location{store.Location()}, poller.Config{QueueURL: queue.URL}, sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		calls.add(m)
		if m.ReceiveCount == 1 {
			assert.True(t, objectExists(t, s3client, pointer))
		}
		return nil
	}))
	testenv.Eventually(t, patience, "the second delivery handled, deleted and its payload deleted", func() bool {
		return server.Stats().Deleted == 1 && cleaner.Stats().Deleted == 1
	})
	got := calls.all()
	require.Len(t, got, 2, "handled, delete failed, delivered again, handled")
	assert.Equal(t, []int{1, 2}, []int{got[0].receiveCount, got[1].receiveCount})
	assert.True(t, got[1].body == body, "the second delivery still resolved the payload")
	assert.Equal(t, int64(1), server.Stats().DeleteFailures)
	assert.False(t, objectExists(t, s3client, pointer))
}
