package encrypt_test

// Tests on the local emulators: KMS on moto (AWS_ENDPOINT_URL_KMS), SQS on LocalStack or
// ElasticMQ, S3 on moto for the claim check. Each runs on its own keys and queues.

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/encrypt"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/redrive"
)

// patience bounds every wait for the emulators (shared by every test run on the
// machine, moto serving one request at a time); a wait ends when its condition holds.
const patience = 3 * time.Minute

// countingKMS is the emulator's KMS client, recording the calls made through it.
type countingKMS struct {
	*kms.Client
	mu        sync.Mutex
	generated int
	decrypted []string // the KeyId of each Decrypt
}

func (c *countingKMS) GenerateDataKey(ctx context.Context, input *kms.GenerateDataKeyInput, optFns ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	c.mu.Lock()
	c.generated++
	c.mu.Unlock()
	return c.Client.GenerateDataKey(ctx, input, optFns...)
}

func (c *countingKMS) Decrypt(ctx context.Context, input *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	c.mu.Lock()
	c.decrypted = append(c.decrypted, aws.ToString(input.KeyId))
	c.mu.Unlock()
	return c.Client.Decrypt(ctx, input, optFns...)
}

func (c *countingKMS) calls() (generated int, decrypted []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.generated, append([]string(nil), c.decrypted...)
}

// encryptingProducer returns a producer encrypting under keyID through client.
func encryptingProducer(t *testing.T, client *sqs.Client, keys encrypt.GenerateDataKeyAPI, keyID string, config producer.Config) *producer.Producer {
	t.Helper()
	encrypter, err := encrypt.NewEncrypter(keys, encrypt.EncrypterConfig{KeyID: keyID})
	require.NoError(t, err)
	config.Encrypter = encrypter
	jobs, err := producer.New(client, config)
	require.NoError(t, err)
	return jobs
}

// bodies records the bodies a handler saw, by job id.
type bodies struct {
	mu   sync.Mutex
	byID map[string]string
}

func (b *bodies) handler() sqsworker.Handler {
	return sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.byID == nil {
			b.byID = map[string]string{}
		}
		b.byID[m.JobID()] = m.Body
		return nil
	})
}

func (b *bodies) all() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]string, len(b.byID))
	for id, body := range b.byID {
		out[id] = body
	}
	return out
}

// startWorker runs a poller on queueURL with handler behind middlewares, stopped when
// the test ends.
func startWorker(t *testing.T, client *sqs.Client, queueURL string, handler sqsworker.Handler, middlewares ...sqsworker.Middleware) *poller.Server {
	t.Helper()
	server, err := poller.New(client, poller.Config{QueueURL: queueURL, WaitTime: time.Second}, sqsworker.Chain(handler, middlewares...))
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
	return server
}

// newDecrypter returns a decrypter allowing keys.
func newDecrypter(t *testing.T, client encrypt.DecryptAPI, keys ...string) *encrypt.Decrypter {
	t.Helper()
	decrypter, err := encrypt.NewDecrypter(client, encrypt.DecrypterConfig{AllowedKeys: keys})
	require.NoError(t, err)
	return decrypter
}

// receiveOne receives the one message of queueURL, waiting up to patience.
func receiveOne(t *testing.T, client *sqs.Client, queueURL string) sqstypes.Message {
	t.Helper()
	messages := testenv.Receive(t, client, sqs.ReceiveMessageInput{
		QueueUrl:              aws.String(queueURL),
		MessageAttributeNames: []string{"All"},
		VisibilityTimeout:     30,
	}, 1, patience)
	return messages[0]
}

func attribute(message sqstypes.Message, name string) string {
	return aws.ToString(message.MessageAttributes[name].StringValue)
}

type order struct {
	Customer string `json:"customer"`
	Card     string `json:"card"`
}

func TestEncryptedJobRoundTripsOnEmulator(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), &countingKMS{Client: testenv.KMS(t)}
	keyARN, _ := testenv.NewKMSKey(t, keys.Client)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	jobs := encryptingProducer(t, client, keys, keyARN, producer.Config{})

	ids := map[string]string{}
	for i := range 5 {
		job := producer.Job{Type: "charge", Payload: order{Customer: "c-" + string(rune('a'+i)), Card: "4111-1111-1111-1111"}}
		prepared, err := producer.Prepare(queue.URL, job)
		require.NoError(t, err)
		_, err = jobs.SendPrepared(context.Background(), prepared)
		require.NoError(t, err)
		want, err := json.Marshal(job.Payload)
		require.NoError(t, err)
		ids[prepared.JobID()] = string(want)
	}

	// What SQS holds: ciphertext and the envelope naming the key, no card number.
	first := receiveOne(t, client, queue.URL)
	assert.NotContains(t, aws.ToString(first.Body), "4111-1111-1111-1111", "no plaintext: a dash is outside the base64 alphabet, so only a leak can match")
	header, err := encrypt.ParseHeader(attribute(first, sqsworker.AttributeEncryption))
	require.NoError(t, err)
	assert.Equal(t, keyARN, header.KeyARN)
	_, err = client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(queue.URL), ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: 0})
	require.NoError(t, err)

	decrypter := newDecrypter(t, keys, keyARN)
	var seen bodies
	server := startWorker(t, client, queue.URL, seen.handler(), decrypter.Middleware())
	testenv.Eventually(t, patience, "the five jobs handled", func() bool { return server.Stats().Deleted == 5 })

	assert.Equal(t, ids, seen.all(), "each handler got its job's plaintext")
	generated, decrypted := keys.calls()
	assert.Equal(t, 1, generated, "one data key for the five jobs of one type")
	assert.Equal(t, []string{keyARN}, decrypted, "one Decrypt for the five jobs: the data key is cached")
	assert.Equal(t, encrypt.Stats{KMSCalls: 1, CacheHits: 4}, decrypter.Stats())
}

func TestKeyRotationWithJobsInFlightOnEmulator(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), testenv.KMS(t)
	keyA, idA := testenv.NewKMSKey(t, keys)
	keyB, _ := testenv.NewKMSKey(t, keys)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	ctx := context.Background()

	send := func(jobs *producer.Producer, text string) {
		t.Helper()
		_, err := jobs.Send(ctx, queue.URL, producer.Job{Type: "note", ID: text, Body: text})
		require.NoError(t, err)
	}
	// Two jobs under key A; KMS rotates A (automatic rotation on, then an on-demand
	// rotation); a new producer under A sends one more; the producers move to key B.
	underA := encryptingProducer(t, client, keys, keyA, producer.Config{})
	send(underA, "01JA0000000000000000000001")
	send(underA, "01JA0000000000000000000002")
	_, err := keys.EnableKeyRotation(ctx, &kms.EnableKeyRotationInput{KeyId: aws.String(idA)})
	require.NoError(t, err)
	_, err = keys.RotateKeyOnDemand(ctx, &kms.RotateKeyOnDemandInput{KeyId: aws.String(idA)})
	require.NoError(t, err)
	send(encryptingProducer(t, client, keys, keyA, producer.Config{}), "01JA0000000000000000000003")
	underB := encryptingProducer(t, client, keys, keyB, producer.Config{})
	send(underB, "01JB0000000000000000000001")
	send(underB, "01JB0000000000000000000002")

	var seen bodies
	server := startWorker(t, client, queue.URL, seen.handler(), newDecrypter(t, keys, keyA, keyB).Middleware())
	testenv.Eventually(t, patience, "the five jobs handled", func() bool { return server.Stats().Deleted == 5 })
	assert.Equal(t, map[string]string{
		"01JA0000000000000000000001": "01JA0000000000000000000001",
		"01JA0000000000000000000002": "01JA0000000000000000000002",
		"01JA0000000000000000000003": "01JA0000000000000000000003",
		"01JB0000000000000000000001": "01JB0000000000000000000001",
		"01JB0000000000000000000002": "01JB0000000000000000000002",
	}, seen.all())
	assert.Zero(t, server.Stats().DeadLettered)
}

func TestClaimCheckPayloadIsStoredEncryptedOnEmulator(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), testenv.KMS(t)
	if os.Getenv("AWS_ENDPOINT_URL_S3") == "" {
		t.Fatal("AWS_ENDPOINT_URL_S3 is not set; eval \"$(localstack/env)\" sets it (moto serves S3)")
	}
	s3client := s3.NewFromConfig(testenv.AWSConfig(t), func(o *s3.Options) { o.UsePathStyle = true })
	bucket := strings.ToLower(testenv.UniqueName(t))
	_, err := s3client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		listed, err := s3client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		if err == nil {
			for _, object := range listed.Contents {
				_, _ = s3client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: object.Key})
			}
		}
		_, _ = s3client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	})
	keyARN, _ := testenv.NewKMSKey(t, keys)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	store, err := claimcheck.NewStore(s3client, claimcheck.Config{Bucket: bucket, KeyPrefix: "jobs/"})
	require.NoError(t, err)
	jobs := encryptingProducer(t, client, keys, keyARN, producer.Config{PayloadStore: store, OffloadThreshold: 4096})
	plaintext := `{"card":"4111-1111-1111-1111","scan":"` + strings.Repeat("x", 64<<10) + `"}`
	prepared, err := producer.Prepare(queue.URL, producer.Job{Type: "scan", Body: plaintext})
	require.NoError(t, err)
	_, err = jobs.SendPrepared(context.Background(), prepared)
	require.NoError(t, err)

	// SQS holds a pointer and the envelope; S3 holds ciphertext.
	message := receiveOne(t, client, queue.URL)
	pointer, err := claimcheck.ParsePointer(aws.ToString(message.Body))
	require.NoError(t, err)
	require.NotEmpty(t, attribute(message, sqsworker.AttributeEncryption))
	object, err := s3client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(pointer.Bucket), Key: aws.String(pointer.Key)})
	require.NoError(t, err)
	stored, err := io.ReadAll(object.Body)
	require.NoError(t, err)
	_ = object.Body.Close()
	assert.NotContains(t, string(stored), "4111-1111-1111-1111", "no plaintext: a dash is outside the base64 alphabet, so only a leak can match (\"4111\" alone is in 64 KiB of base64 about once in 200 runs)")
	assert.Greater(t, len(stored), len(plaintext), "base64 ciphertext")
	_, err = client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(queue.URL), ReceiptHandle: message.ReceiptHandle, VisibilityTimeout: 0})
	require.NoError(t, err)

	resolver, err := claimcheck.NewResolver(s3client, claimcheck.ResolverConfig{Allow: []claimcheck.Location{store.Location()}})
	require.NoError(t, err)
	var seen bodies
	server := startWorker(t, client, queue.URL, seen.handler(), resolver.Middleware(), newDecrypter(t, keys, keyARN).Middleware())
	testenv.Eventually(t, patience, "the job handled", func() bool { return server.Stats().Deleted == 1 })
	assert.True(t, seen.all()[prepared.JobID()] == plaintext, "the handler got the plaintext")
}

func TestEncryptedBatchRoundTripsOnEmulator(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), testenv.KMS(t)
	keyARN, _ := testenv.NewKMSKey(t, keys)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	jobs := encryptingProducer(t, client, keys, keyARN, producer.Config{})
	batch := []producer.Job{
		{ID: "01JC0000000000000000000001", Type: "charge", Body: "secret 1"},
		{ID: "01JC0000000000000000000002", Type: "refund", Body: "secret 2"},
		{ID: "01JC0000000000000000000003", Type: "charge", Body: "secret 3"},
	}
	_, err := jobs.SendBatch(context.Background(), queue.URL, batch)
	require.NoError(t, err)

	var seen bodies
	server := startWorker(t, client, queue.URL, seen.handler(), newDecrypter(t, keys, keyARN).Middleware())
	testenv.Eventually(t, patience, "the three jobs handled", func() bool { return server.Stats().Deleted == 3 })
	assert.Equal(t, map[string]string{
		"01JC0000000000000000000001": "secret 1",
		"01JC0000000000000000000002": "secret 2",
		"01JC0000000000000000000003": "secret 3",
	}, seen.all())
}

func TestFieldLevelEncryptionRoundTripsOnEmulator(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), testenv.KMS(t)
	keyARN, _ := testenv.NewKMSKey(t, keys)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	encrypter, err := encrypt.NewEncrypter(keys, encrypt.EncrypterConfig{KeyID: keyARN, Fields: []string{"card"}})
	require.NoError(t, err)
	jobs, err := producer.New(client, producer.Config{Encrypter: encrypter})
	require.NoError(t, err)
	_, err = jobs.Send(context.Background(), queue.URL, producer.Job{Type: "charge", Payload: order{Customer: "c-1", Card: "4111-1111-1111-1111"}})
	require.NoError(t, err)

	message := receiveOne(t, client, queue.URL)
	assert.Contains(t, aws.ToString(message.Body), `"customer":"c-1"`, "the other fields stay readable in SQS")
	assert.NotContains(t, aws.ToString(message.Body), "4111-1111-1111-1111")
	_, err = client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(queue.URL), ReceiptHandle: message.ReceiptHandle, VisibilityTimeout: 0})
	require.NoError(t, err)

	got := make(chan order, 1)
	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "charge", func(_ context.Context, job order) error {
		got <- job
		return nil
	})
	startWorker(t, client, queue.URL, mux, newDecrypter(t, keys, keyARN).Middleware())
	assert.Equal(t, order{Customer: "c-1", Card: "4111-1111-1111-1111"}, testenv.Recv(t, got, patience, "the decoded job"))
}

// A job dead-lettered for a key the worker did not allow yet is redriven once the key is
// allowed, and decrypts: the envelope and the job id travel through the host's
// dead-letter send and the redrive.
func TestDeadLetteredEncryptedJobDecryptsAfterARedriveOnEmulator(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), testenv.KMS(t)
	keyA, _ := testenv.NewKMSKey(t, keys)
	keyB, _ := testenv.NewKMSKey(t, keys)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	prepared, err := producer.Prepare(queue.URL, producer.Job{Type: "charge", Body: "secret under B"})
	require.NoError(t, err)
	_, err = encryptingProducer(t, client, keys, keyB, producer.Config{}).SendPrepared(context.Background(), prepared)
	require.NoError(t, err)

	old := startWorker(t, client, queue.URL, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		t.Error("the worker allowing key A only must not run the job")
		return nil
	}), newDecrypter(t, keys, keyA).Middleware())
	testenv.Eventually(t, patience, "the job dead-lettered", func() bool { return old.Stats().DeadLettered == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	require.NoError(t, old.Shutdown(ctx))

	mover, err := redrive.NewMover(client, redrive.Config{Source: queue.DeadLetterQueueURL, Destination: queue.URL})
	require.NoError(t, err)
	moved, err := mover.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, moved.Moved)

	var seen bodies
	server := startWorker(t, client, queue.URL, seen.handler(), newDecrypter(t, keys, keyA, keyB).Middleware())
	testenv.Eventually(t, patience, "the redriven job handled", func() bool { return server.Stats().Deleted == 1 })
	assert.Equal(t, map[string]string{prepared.JobID(): "secret under B"}, seen.all())
}
