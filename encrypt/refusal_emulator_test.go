package encrypt_test

// Emulator tests of what a worker refuses: keys not allowed, keys KMS refuses, hostile
// and tampered messages. Each dead-letters at its first receive with its reason.

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/encrypt"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

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
			// Another base64 letter in the first place: still base64, other bits.
			if body[0] == 'A' {
				body[0] = 'B'
			} else {
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
