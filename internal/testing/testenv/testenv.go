// Package testenv gives tests real SQS and DynamoDB clients on the local emulator
// (localstack/up), and fresh, uniquely named queues and tables that are removed when the
// test ends.
//
// The clients are configured only through the standard AWS variables
// (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION, credentials), which
// `make test` sets from localstack/env. A test that needs the emulator fails, never skips,
// when they are missing: CI must not pass by hiding a missing emulator. The SQS emulator
// is LocalStack or ElasticMQ ([SQSEmulator]); a check that depends on AWS behaviour one
// of them lacks skips there only ([SkipOn], the deviations in localstack/README.md).
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/sqsinfo"
	"github.com/sqsworker/sqsworker/table"
)

// UnitOnlyVariable names the environment variable that, set to 1, makes every test that
// asks testenv for an emulator client skip. Only `make test-stress` sets it, for its
// unit-level stage (-race -count=200 of the tests that need no emulator); its emulator
// stage runs these tests with the variable unset. A test is an emulator test exactly when
// it gets its clients from testenv, so the split needs no list to keep up to date.
const UnitOnlyVariable = "SQSWORKER_TEST_UNIT_ONLY"

// AWSConfig loads the default AWS configuration and fails the test when the emulator
// endpoints are not set (it skips the test when UnitOnlyVariable is 1).
func AWSConfig(t testing.TB) aws.Config {
	t.Helper()
	if os.Getenv(UnitOnlyVariable) == "1" {
		t.Skipf("testenv: emulator test, skipped because %s=1 (the unit-level stage of make test-stress)", UnitOnlyVariable)
	}
	for _, name := range []string{"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_REGION"} {
		if os.Getenv(name) == "" {
			t.Fatalf("testenv: %s is not set; run the tests with `make test`, which starts the emulator (localstack/up) and sets it", name)
		}
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatalf("testenv: loading AWS config: %v", err)
	}
	return cfg
}

// SQS returns an SQS client for the emulator.
func SQS(t testing.TB) *sqs.Client {
	t.Helper()
	return sqs.NewFromConfig(AWSConfig(t))
}

// DynamoDB returns a DynamoDB client for the emulator.
func DynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	return dynamodb.NewFromConfig(AWSConfig(t))
}

// QueueOptions describes a test queue. Zero values take the defaults noted.
type QueueOptions struct {
	// FIFO creates "<name>.fifo" queues (and a FIFO dead-letter queue).
	FIFO bool
	// ContentBasedDeduplication turns on content-based deduplication (FIFO only).
	ContentBasedDeduplication bool
	// VisibilityTimeout of the source queue; if zero, 30 s.
	VisibilityTimeout time.Duration
	// MaxReceiveCount of the redrive policy; if zero, 3. Ignored when NoDeadLetterQueue.
	MaxReceiveCount int
	// NoDeadLetterQueue creates the source queue without a dead-letter queue and redrive policy.
	NoDeadLetterQueue bool
	// MaximumMessageSize, if not zero, is set on the source queue and its dead-letter
	// queue (bytes); if zero, the emulator's default.
	MaximumMessageSize int
}

// Queue names a test queue pair.
type Queue struct {
	URL                string
	ARN                string
	DeadLetterQueueURL string
	DeadLetterQueueARN string
}

// NewQueue creates a uniquely named queue (and, unless NoDeadLetterQueue, its dead-letter
// queue and redrive policy) for this test, and deletes them when the test ends.
func NewQueue(t testing.TB, client *sqs.Client, options QueueOptions) Queue {
	t.Helper()
	name := UniqueName(t)
	suffix := ""
	if options.FIFO {
		suffix = ".fifo"
	}
	visibility := options.VisibilityTimeout
	if visibility == 0 {
		visibility = 30 * time.Second
	}
	maxReceiveCount := options.MaxReceiveCount
	if maxReceiveCount == 0 {
		maxReceiveCount = 3
	}
	fifoAttributes := func(attributes map[string]string) map[string]string {
		if options.MaximumMessageSize != 0 {
			attributes["MaximumMessageSize"] = strconv.Itoa(options.MaximumMessageSize)
		}
		if options.FIFO {
			attributes["FifoQueue"] = "true"
			if options.ContentBasedDeduplication {
				attributes["ContentBasedDeduplication"] = "true"
			}
		}
		return attributes
	}
	var queue Queue
	attributes := fifoAttributes(map[string]string{
		"VisibilityTimeout": strconv.Itoa(int(visibility / time.Second)),
	})
	if !options.NoDeadLetterQueue {
		queue.DeadLetterQueueURL = createQueue(t, client, name+"-dlq"+suffix, fifoAttributes(map[string]string{}))
		queue.DeadLetterQueueARN = QueueARN(t, client, queue.DeadLetterQueueURL)
		policy, _ := json.Marshal(map[string]any{
			"deadLetterTargetArn": queue.DeadLetterQueueARN,
			"maxReceiveCount":     maxReceiveCount,
		})
		attributes["RedrivePolicy"] = string(policy)
	}
	queue.URL = createQueue(t, client, name+suffix, attributes)
	queue.ARN = QueueARN(t, client, queue.URL)
	return queue
}

func createQueue(t testing.TB, client *sqs.Client, name string, attributes map[string]string) string {
	t.Helper()
	output, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{
		QueueName:  aws.String(name),
		Attributes: attributes,
	})
	if err != nil {
		t.Fatalf("testenv: creating queue %s: %v", name, err)
	}
	url := aws.ToString(output.QueueUrl)
	t.Cleanup(func() {
		_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	return url
}

// QueueARN reads a queue's ARN.
func QueueARN(t testing.TB, client *sqs.Client, url string) string {
	t.Helper()
	return QueueAttributes(t, client, url)["QueueArn"]
}

// QueueAttributes reads all of a queue's attributes.
func QueueAttributes(t testing.TB, client *sqs.Client, url string) map[string]string {
	t.Helper()
	output, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("testenv: reading attributes of %s: %v", url, err)
	}
	return output.Attributes
}

// Counts returns a queue's ApproximateNumberOfMessages (visible) and
// ApproximateNumberOfMessagesNotVisible (in flight).
func Counts(t testing.TB, client *sqs.Client, url string) (visible, inFlight int) {
	t.Helper()
	attributes := QueueAttributes(t, client, url)
	visible, _ = strconv.Atoi(attributes["ApproximateNumberOfMessages"])
	inFlight, _ = strconv.Atoi(attributes["ApproximateNumberOfMessagesNotVisible"])
	return visible, inFlight
}

// NewTable creates a uniquely named on-demand DynamoDB table with the string partition key
// table.PartitionKey ("id", the shared table's schema) and deletes it when the test ends.
func NewTable(t testing.TB, client *dynamodb.Client) string {
	t.Helper()
	name := UniqueName(t)
	_, err := client.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: dynamodbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []dynamodbtypes.AttributeDefinition{
			{AttributeName: aws.String(table.PartitionKey), AttributeType: dynamodbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []dynamodbtypes.KeySchemaElement{
			{AttributeName: aws.String(table.PartitionKey), KeyType: dynamodbtypes.KeyTypeHash},
		},
	})
	// The name is unique to this call, so a table that already exists is this call's own,
	// created by an attempt the SDK retried after a lost response.
	var exists *dynamodbtypes.ResourceInUseException
	if err != nil && !errors.As(err, &exists) {
		t.Fatalf("testenv: creating table %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

var unsafeNameCharacters = regexp.MustCompile(`[^A-Za-z0-9-]+`)

// UniqueName returns a name made from the test name and a random suffix, safe for queue
// and table names (at most 60 characters, leaving room for "-dlq.fifo").
func UniqueName(t testing.TB) string {
	random := make([]byte, 4)
	_, _ = rand.Read(random)
	base := unsafeNameCharacters.ReplaceAllString(t.Name(), "-")
	if len(base) > 50 {
		base = base[len(base)-50:]
	}
	return fmt.Sprintf("%s-%s", base, hex.EncodeToString(random))
}

// Eventually polls condition every 50 ms until it returns true, and fails the test with
// message when timeout passes first. Use it instead of sleeps.
func Eventually(t testing.TB, timeout time.Duration, message string, condition func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !condition() {
		if time.Now().After(deadline) {
			t.Fatalf("testenv: timed out after %s waiting for: %s", timeout, message)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ReceiveTimeout bounds Receive in most tests: far above what a receive takes on a busy
// 2-core machine, so reaching it means the messages are not there.
const ReceiveTimeout = 30 * time.Second

// Receive receives from input.QueueUrl until want messages have arrived, and fails the
// test when timeout passes first. An empty receive is never taken to mean "nothing left":
// under load the emulator can return an empty long poll while messages are visible (and
// SQS samples its servers on a short poll). Set input.VisibilityTimeout so received
// messages stay hidden while the rest arrive. A receive whose answer was lost (seen under
// load: SQS hid its messages, then the SDK retried) hides them for VisibilityTimeout (the
// queue's when input sets none), so that long is added to timeout; a message seen again once its visibility ran out is
// counted once (by message id). Once want messages have arrived, one more receive with no
// wait collects any extra message, so a caller that asserts an exact count sees
// duplicates (a second copy has its own message id).
func Receive(t testing.TB, client *sqs.Client, input sqs.ReceiveMessageInput, want int, timeout time.Duration) []sqstypes.Message {
	t.Helper()
	if input.MaxNumberOfMessages == 0 {
		input.MaxNumberOfMessages = sqsinfo.MaxBatchEntries
	}
	if input.WaitTimeSeconds == 0 {
		input.WaitTimeSeconds = 1
	}
	visibility := time.Duration(input.VisibilityTimeout) * time.Second
	if input.VisibilityTimeout == 0 { // the queue's own visibility timeout applies
		seconds, _ := strconv.Atoi(QueueAttributes(t, client, aws.ToString(input.QueueUrl))["VisibilityTimeout"])
		visibility = time.Duration(seconds) * time.Second
	}
	timeout += visibility
	var messages []sqstypes.Message
	seen := map[string]bool{}
	add := func(received []sqstypes.Message) {
		for _, message := range received {
			if id := aws.ToString(message.MessageId); !seen[id] {
				seen[id] = true
				messages = append(messages, message)
			}
		}
	}
	deadline := time.Now().Add(timeout)
	for len(messages) < want {
		if time.Now().After(deadline) {
			t.Fatalf("testenv: timed out after %s waiting for %d messages from %s; received %d", timeout, want, aws.ToString(input.QueueUrl), len(messages))
		}
		output, err := client.ReceiveMessage(context.Background(), &input)
		if err != nil {
			t.Fatalf("testenv: receiving from %s: %v", aws.ToString(input.QueueUrl), err)
		}
		add(output.Messages)
	}
	extra := input
	extra.WaitTimeSeconds = 0
	output, err := client.ReceiveMessage(context.Background(), &extra)
	if err != nil {
		t.Fatalf("testenv: receiving from %s: %v", aws.ToString(input.QueueUrl), err)
	}
	add(output.Messages)
	return messages
}

// RequireFIFOGroupBlocking is the probe the FIFO message group tests of both hosts run
// behind: after a group's head is rescheduled (5 s) and the message behind it released
// (0) in one call, SQS hands out nothing of the group until the head is visible again
// (AWS: a FIFO group's messages are not returned while an earlier one is in flight). On
// an emulator that hands out the later message the test is skipped with that reason
// (LocalStack 4.14; ElasticMQ passes: see localstack/README.md).
func RequireFIFOGroupBlocking(t testing.TB, client *sqs.Client) {
	t.Helper()
	queue := NewQueue(t, client, QueueOptions{FIFO: true, ContentBasedDeduplication: true, NoDeadLetterQueue: true})
	ctx := context.Background()
	for _, body := range []string{"p1", "p2"} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: aws.String(body), MessageGroupId: aws.String("g")}); err != nil {
			t.Fatal(err)
		}
	}
	var handles []string
	for deadline := time.Now().Add(10 * time.Second); len(handles) < 2 && time.Now().Before(deadline); {
		output, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL), MaxNumberOfMessages: sqsinfo.MaxBatchEntries, WaitTimeSeconds: 1, VisibilityTimeout: 30})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range output.Messages {
			handles = append(handles, aws.ToString(m.ReceiptHandle))
		}
	}
	if len(handles) != 2 {
		t.Fatalf("testenv: FIFO probe received %d of its 2 messages", len(handles))
	}
	if _, err := client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(queue.URL), Entries: []sqstypes.ChangeMessageVisibilityBatchRequestEntry{
		{Id: aws.String("0"), ReceiptHandle: aws.String(handles[0]), VisibilityTimeout: 5},
		{Id: aws.String("1"), ReceiptHandle: aws.String(handles[1]), VisibilityTimeout: 0},
	}}); err != nil {
		t.Fatal(err)
	}
	output, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL), MaxNumberOfMessages: sqsinfo.MaxBatchEntries, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(output.Messages) > 0 {
		t.Skipf("this SQS emulator (%s) hands out %q while the earlier message of its FIFO group is in flight; AWS does not. "+
			"The FIFO scenarios run only on a lane that passes this probe: localstack/elasticmq-up, then SQSWORKER_SQS_EMULATOR=elasticmq eval \"$(localstack/env)\"",
			os.Getenv("AWS_ENDPOINT_URL_SQS"), aws.ToString(output.Messages[0].Body))
	}
}

// WaitTimeout bounds Recv in most tests: far above what a step takes on a busy 2-core
// machine with a serialized emulator, so reaching it means the step is not coming.
const WaitTimeout = 2 * time.Minute

// Recv returns the next value from ch, and fails the test naming what it waited for when
// timeout passes first (a closed channel yields its zero value at once). Use it instead
// of a bare <-ch, so a test that cannot make progress fails instead of hanging until the
// package timeout.
func Recv[T any](t testing.TB, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case value := <-ch:
		return value
	case <-timer.C:
		t.Fatalf("testenv: timed out after %s waiting for: %s", timeout, what)
		panic("unreachable")
	}
}

// PostgresURL returns the URL of the local PostgreSQL server (SQSWORKER_POSTGRES_URL, set by
// localstack/env; localstack/postgres-up starts the server) and fails the test when it is
// not set. Like AWSConfig it skips the test when UnitOnlyVariable is 1.
func PostgresURL(t testing.TB) string {
	t.Helper()
	if os.Getenv(UnitOnlyVariable) == "1" {
		t.Skipf("testenv: PostgreSQL test, skipped because %s=1 (the unit-level stage of make test-stress)", UnitOnlyVariable)
	}
	url := os.Getenv("SQSWORKER_POSTGRES_URL")
	if url == "" {
		t.Fatal("testenv: SQSWORKER_POSTGRES_URL is not set; run the tests with `make test`, which starts PostgreSQL (localstack/postgres-up) and sets it (localstack/env)")
	}
	return url
}
