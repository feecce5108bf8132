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
	assert.NotContains(t, aws.ToString(first.Body), "4111")
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

// deadLettered runs a worker with decrypter on queue until it dead-letters one message,
// and returns the dead-letter queue's copy.
func deadLettered(t *testing.T, client *sqs.Client, queue testenv.Queue, decrypter *encrypt.Decrypter) sqstypes.Message {
	t.Helper()
	server := startWorker(t, client, queue.URL, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		t.Error("the handler must not run")
		return nil
	}), decrypter.Middleware())
	testenv.Eventually(t, patience, "the message dead-lettered", func() bool { return server.Stats().DeadLettered == 1 })
	return receiveOne(t, client, queue.DeadLetterQueueURL)
}

func TestJobUnderAKeyNotAllowedIsDeadLetteredWithoutAKMSCallOnEmulator(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), &countingKMS{Client: testenv.KMS(t)}
	allowed, _ := testenv.NewKMSKey(t, keys.Client)
	other, _ := testenv.NewKMSKey(t, keys.Client)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	sent, err := encryptingProducer(t, client, keys, other, producer.Config{}).Send(context.Background(), queue.URL, producer.Job{Type: "note", Body: "secret"})
	require.NoError(t, err)

	decrypter := newDecrypter(t, keys, allowed)
	dead := deadLettered(t, client, queue, decrypter)
	assert.Equal(t, encrypt.ReasonKeyNotAllowed, attribute(dead, sqsworker.AttributeFailureReason))
	assert.Contains(t, attribute(dead, sqsworker.AttributeFailureError), other)
	assert.Equal(t, sent, attribute(dead, sqsworker.AttributeFailureMessageID))
	assert.Equal(t, "1", attribute(dead, sqsworker.AttributeFailureReceiveCount), "failed at its first receive")
	assert.NotContains(t, aws.ToString(dead.Body), "secret", "the dead letter keeps the ciphertext")
	_, decrypted := keys.calls()
	assert.Empty(t, decrypted, "KMS was not called")
}

func TestHostileMessageNamingAnAttackersKeyIsRefusedWithoutAKMSCallOnEmulator(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), &countingKMS{Client: testenv.KMS(t)}
	allowed, _ := testenv.NewKMSKey(t, keys.Client)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	attacker := "arn:aws:kms:us-east-1:666666666666:key/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	header := encrypt.Header{KeyARN: attacker, EncryptedDataKey: []byte("attacker's blob"), Nonce: make([]byte, 12)}
	_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(queue.URL), MessageBody: aws.String("AAAA"),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			sqsworker.AttributeEncryption: {DataType: aws.String("String"), StringValue: aws.String(header.String())},
			sqsworker.AttributeJobType:    {DataType: aws.String("String"), StringValue: aws.String("note")},
		},
	})
	require.NoError(t, err)

	dead := deadLettered(t, client, queue, newDecrypter(t, keys, allowed))
	assert.Equal(t, encrypt.ReasonKeyNotAllowed, attribute(dead, sqsworker.AttributeFailureReason))
	assert.Contains(t, attribute(dead, sqsworker.AttributeFailureError), attacker)
	_, decrypted := keys.calls()
	assert.Empty(t, decrypted, "the attacker's key was never sent to KMS")
}

func TestDataKeyOfAnotherKeyUnderAnAllowedNameIsRefusedOnEmulator(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), &countingKMS{Client: testenv.KMS(t)}
	allowed, _ := testenv.NewKMSKey(t, keys.Client)
	other, _ := testenv.NewKMSKey(t, keys.Client)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	jobs := encryptingProducer(t, client, keys, other, producer.Config{})
	prepared, err := producer.Prepare(queue.URL, producer.Job{Type: "note", Body: "secret"})
	require.NoError(t, err)
	_, err = jobs.SendPrepared(context.Background(), prepared)
	require.NoError(t, err)
	// Move the message, its header renamed to the allowed key, to a second queue.
	message := receiveOne(t, client, queue.URL)
	header, err := encrypt.ParseHeader(attribute(message, sqsworker.AttributeEncryption))
	require.NoError(t, err)
	header.KeyARN = allowed
	message.MessageAttributes[sqsworker.AttributeEncryption] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(header.String())}
	hostile := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	_, err = client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(hostile.URL), MessageBody: message.Body, MessageAttributes: message.MessageAttributes})
	require.NoError(t, err)

	dead := deadLettered(t, client, hostile, newDecrypter(t, keys, allowed))
	// AWS answers IncorrectKeyException, moto AccessDeniedException: both are
	// ReasonKeyRefused (localstack/README.md).
	assert.Equal(t, encrypt.ReasonKeyRefused, attribute(dead, sqsworker.AttributeFailureReason))
	_, decrypted := keys.calls()
	assert.Equal(t, []string{allowed}, decrypted, "KMS was asked to use the allowed key only")
}

// A key the worker allows but KMS does not know (deleted, or of another account) is
// refused by KMS (NotFoundException). moto 5.2.5 refuses nothing for a disabled key or
// one pending deletion (localstack/README.md); the unit tests cover those answers.
func TestKeyKMSRefusesDeadLettersWithItsReasonOnEmulator(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), &countingKMS{Client: testenv.KMS(t)}
	real, _ := testenv.NewKMSKey(t, keys.Client)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	_, err := encryptingProducer(t, client, keys, real, producer.Config{}).Send(context.Background(), queue.URL, producer.Job{Type: "note", Body: "secret"})
	require.NoError(t, err)
	message := receiveOne(t, client, queue.URL)
	header, err := encrypt.ParseHeader(attribute(message, sqsworker.AttributeEncryption))
	require.NoError(t, err)
	gone := "arn:aws:kms:us-east-1:123456789012:key/00000000-0000-4000-8000-000000000000"
	header.KeyARN = gone
	message.MessageAttributes[sqsworker.AttributeEncryption] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(header.String())}
	refused := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	_, err = client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(refused.URL), MessageBody: message.Body, MessageAttributes: message.MessageAttributes})
	require.NoError(t, err)

	dead := deadLettered(t, client, refused, newDecrypter(t, keys, gone))
	assert.Equal(t, encrypt.ReasonKeyRefused, attribute(dead, sqsworker.AttributeFailureReason))
	assert.Contains(t, attribute(dead, sqsworker.AttributeFailureError), "NotFoundException")
	assert.Equal(t, "1", attribute(dead, sqsworker.AttributeFailureReceiveCount), "not retried")
}

func TestTamperedJobsDeadLetterOnEmulator(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), testenv.KMS(t)
	keyARN, _ := testenv.NewKMSKey(t, keys)
	source := testenv.NewQueue(t, client, testenv.QueueOptions{})
	jobs := encryptingProducer(t, client, keys, keyARN, producer.Config{})

	for _, tc := range []struct {
		name   string
		tamper func(message *sqstypes.Message)
		reason string
	}{
		{"body", func(m *sqstypes.Message) {
			body := []byte(aws.ToString(m.Body))
			body[0] ^= 'A' ^ 'B' // base64 stays base64
			if body[0] == aws.ToString(m.Body)[0] {
				body[0] = 'A'
			}
			m.Body = aws.String(string(body))
		}, encrypt.ReasonTampered},
		{"job id", func(m *sqstypes.Message) {
			m.MessageAttributes[sqsworker.AttributeJobID] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("01JZ0000000000000000000000")}
		}, encrypt.ReasonTampered},
		// A changed job type changes the data key's encryption context: KMS answers
		// InvalidCiphertextException.
		{"job type", func(m *sqstypes.Message) {
			m.MessageAttributes[sqsworker.AttributeJobType] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("refund")}
		}, encrypt.ReasonTampered},
		{"header", func(m *sqstypes.Message) {
			m.MessageAttributes[sqsworker.AttributeEncryption] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("AgE=")}
		}, encrypt.ReasonMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jobs.Send(context.Background(), source.URL, producer.Job{Type: "charge", Body: "secret " + tc.name})
			require.NoError(t, err)
			message := receiveOne(t, client, source.URL)
			_, err = client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(source.URL), ReceiptHandle: message.ReceiptHandle})
			require.NoError(t, err)
			tc.tamper(&message)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
			_, err = client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: message.Body, MessageAttributes: message.MessageAttributes})
			require.NoError(t, err)

			dead := deadLettered(t, client, queue, newDecrypter(t, keys, keyARN))
			assert.Equal(t, tc.reason, attribute(dead, sqsworker.AttributeFailureReason))
			assert.Equal(t, aws.ToString(message.Body), aws.ToString(dead.Body), "the dead letter is the message as received")
			assert.False(t, strings.Contains(attribute(dead, sqsworker.AttributeFailureError), "secret"), "no plaintext in the error")
		})
	}
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
	assert.NotContains(t, string(stored), "4111")
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
	assert.NotContains(t, aws.ToString(message.Body), "4111")
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
