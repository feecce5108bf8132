package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/encrypt"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/producer"
)

// peekedLetters is the part of `dlq peek -o json` these tests read.
type peekedLetters struct {
	Messages []struct {
		Body          string `json:"body"`
		Encrypted     bool   `json:"encrypted"`
		EncryptionKey string `json:"encryption_key"`
		Decrypted     bool   `json:"decrypted"`
	} `json:"messages"`
}

// byKey returns the peeked messages by the key they name.
func (p peekedLetters) byKey(t *testing.T) map[string]struct {
	Body      string
	Decrypted bool
} {
	t.Helper()
	out := map[string]struct {
		Body      string
		Decrypted bool
	}{}
	for _, m := range p.Messages {
		if !m.Encrypted {
			t.Fatalf("a message is not marked encrypted: %+v", m)
		}
		out[m.EncryptionKey] = struct {
			Body      string
			Decrypted bool
		}{m.Body, m.Decrypted}
	}
	return out
}

// TestCLIPeekShowsEncryptedPayloadsOnlyWhenAsked: dlq peek shows "encrypted (key ...)"
// in place of a package encrypt payload, and the plaintext only with --decrypt and the
// keys named by --kms-key (or SQSWORKER_KMS_KEYS), each decrypted by KMS (moto).
func TestCLIPeekShowsEncryptedPayloadsOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), testenv.KMS(t)
	keyA, _ := testenv.NewKMSKey(t, keys)
	keyB, _ := testenv.NewKMSKey(t, keys)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	for key, body := range map[string]string{keyA: `{"card":"4111-A"}`, keyB: `{"card":"4111-B"}`} {
		encrypter, err := encrypt.NewEncrypter(keys, encrypt.EncrypterConfig{KeyID: key})
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := producer.New(client, producer.Config{Encrypter: encrypter})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jobs.Send(context.Background(), queue.DeadLetterQueueURL, producer.Job{Type: "charge", Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	dlq := queueName(queue.DeadLetterQueueURL)

	r := want(t, exitOK, "dlq", "peek", dlq)
	if strings.Contains(r.stdout, "4111") || !strings.Contains(r.stdout, "body:            encrypted (key "+keyA+"; --decrypt --kms-key ARN shows it)") ||
		!strings.Contains(r.stdout, "encrypted (key "+keyB) || strings.Contains(r.stdout, "payload-encryption=") {
		t.Fatalf("peek without --decrypt printed:\n%s", r.stdout)
	}
	plain := decode[peekedLetters](t, want(t, exitOK, "dlq", "peek", dlq, "-o", "json")).byKey(t)
	if len(plain) != 2 || strings.Contains(plain[keyA].Body, "4111") || plain[keyA].Decrypted || strings.Contains(plain[keyB].Body, "4111") {
		t.Fatalf("peek -o json without --decrypt = %+v", plain)
	}

	r = want(t, exitUsage, "dlq", "peek", dlq, "--decrypt")
	if !strings.Contains(r.stderr, "--decrypt needs --kms-key") {
		t.Fatalf("--decrypt without keys: stderr %q", r.stderr)
	}
	r = want(t, exitUsage, "dlq", "peek", dlq, "--decrypt", "--kms-key", "alias/jobs")
	if !strings.Contains(r.stderr, "not a KMS key ARN") {
		t.Fatalf("--kms-key alias: stderr %q", r.stderr)
	}

	// Only key A named: A's payload in clear, B's stays encrypted, exit 1 with the reason.
	r = want(t, exitError, "dlq", "peek", dlq, "--decrypt", "--kms-key", keyA, "-o", "json")
	one := decode[peekedLetters](t, r).byKey(t)
	if one[keyA].Body != `{"card":"4111-A"}` || !one[keyA].Decrypted || one[keyB].Decrypted || strings.Contains(one[keyB].Body, "4111") {
		t.Fatalf("peek --decrypt --kms-key A = %+v", one)
	}
	if !strings.Contains(r.stderr, "stays encrypted") || !strings.Contains(r.stderr, encrypt.ReasonKeyNotAllowed) || !strings.Contains(r.stderr, "1 encrypted message not decrypted") {
		t.Fatalf("peek --decrypt --kms-key A: stderr %q", r.stderr)
	}

	// Both keys from the environment: both in clear, in the text form too.
	r = cli(t, []string{kmsKeysVariable + "=" + keyA + "," + keyB}, "dlq", "peek", dlq, "--decrypt")
	if r.code != exitOK || !strings.Contains(r.stdout, `body:            {"card":"4111-A"}`) || !strings.Contains(r.stdout, `body:            {"card":"4111-B"}`) ||
		!strings.Contains(r.stdout, "encryption:      decrypted (key "+keyB+")") {
		t.Fatalf("peek --decrypt with %s: exit %d\n%s%s", kmsKeysVariable, r.code, r.stdout, r.stderr)
	}
}

// TestCLIJobsGetSaysAPayloadIsEncrypted: the record of an encrypted job names its key
// and holds no payload; jobs get says so.
func TestCLIJobsGetSaysAPayloadIsEncrypted(t *testing.T) {
	t.Parallel()
	db, keys := testenv.DynamoDB(t), testenv.KMS(t)
	table := testenv.NewTable(t, db)
	store, err := jobs.NewStore(db, jobs.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	keyARN, _ := testenv.NewKMSKey(t, keys)
	encrypter, err := encrypt.NewEncrypter(keys, encrypt.EncrypterConfig{KeyID: keyARN})
	if err != nil {
		t.Fatal(err)
	}
	id := producer.NewJobID()
	sent := map[string]sqstypes.MessageAttributeValue{
		sqsworker.AttributeJobID:   {DataType: aws.String("String"), StringValue: aws.String(id)},
		sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String("charge")},
	}
	body, envelope, err := encrypter.Encrypt(context.Background(), `{"card":"4111"}`, sent)
	if err != nil {
		t.Fatal(err)
	}
	sent[sqsworker.AttributeEncryption] = envelope
	attributes := map[string]sqsworker.MessageAttribute{}
	for name, value := range sent {
		attributes[name] = sqsworker.MessageAttribute{DataType: "String", StringValue: aws.ToString(value.StringValue)}
	}
	decrypter, err := encrypt.NewDecrypter(keys, encrypt.DecrypterConfig{AllowedKeys: []string{keyARN}})
	if err != nil {
		t.Fatal(err)
	}
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }),
		store.Middleware(jobs.MiddlewareConfig{}), decrypter.Middleware())
	if err := handler.Handle(context.Background(), &sqsworker.Message{ID: "m-1", Body: body, ReceiveCount: 1, MessageAttributes: attributes}); err != nil {
		t.Fatal(err)
	}

	got := decode[jobView](t, want(t, exitOK, "jobs", "get", id, "--table", table, "-o", "json"))
	if got.PayloadKey != keyARN || got.State != jobs.StateSucceeded {
		t.Fatalf("jobs get -o json = %+v", got)
	}
	r := want(t, exitOK, "jobs", "get", id, "--table", table)
	if !strings.Contains(r.stdout, "Payload:     encrypted (key "+keyARN+"; the record holds no payload") || strings.Contains(r.stdout, "4111") {
		t.Fatalf("jobs get:\n%s", r.stdout)
	}
}

// TestCLIPeekShowsAFieldEncryptedBody: with the field-level form, the clear fields are
// shown and the encrypted ones stay ciphertext until --decrypt.
func TestCLIPeekShowsAFieldEncryptedBody(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), testenv.KMS(t)
	keyARN, _ := testenv.NewKMSKey(t, keys)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	encrypter, err := encrypt.NewEncrypter(keys, encrypt.EncrypterConfig{KeyID: keyARN, Fields: []string{"card"}})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := producer.New(client, producer.Config{Encrypter: encrypter})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Send(context.Background(), queue.DeadLetterQueueURL, producer.Job{Type: "charge", Body: `{"card":"4111-F","order":"o-7"}`}); err != nil {
		t.Fatal(err)
	}
	dlq := queueName(queue.DeadLetterQueueURL)
	r := want(t, exitOK, "dlq", "peek", dlq)
	if strings.Contains(r.stdout, "4111") || !strings.Contains(r.stdout, `"order":"o-7"`) ||
		!strings.Contains(r.stdout, "encryption:      fields card encrypted (key "+keyARN) {
		t.Fatalf("peek of a field-encrypted body:\n%s", r.stdout)
	}
	r = want(t, exitOK, "dlq", "peek", dlq, "--decrypt", "--kms-key", keyARN)
	if !strings.Contains(r.stdout, `body:            {"card":"4111-F","order":"o-7"}`) {
		t.Fatalf("peek --decrypt of a field-encrypted body:\n%s", r.stdout)
	}
}
