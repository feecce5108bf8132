package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/provision"
	"github.com/sqsworker/sqsworker/redrive"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// resources are the soak run's own queue, dead-letter queue and idempotency table.
type resources struct {
	queueURL, deadLetterURL, table string
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func createResources(ctx context.Context, sqsClient *sqs.Client, ddb *dynamodb.Client, visibility time.Duration, maxReceiveCount int) (*resources, error) {
	name := "soak-" + randomSuffix()
	r := &resources{table: name}
	dlq, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	if err != nil {
		return nil, fmt.Errorf("creating the dead-letter queue: %w", err)
	}
	r.deadLetterURL = aws.ToString(dlq.QueueUrl)
	attributes, err := sqsClient.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: dlq.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return r, err
	}
	policy, _ := json.Marshal(map[string]any{
		"deadLetterTargetArn": attributes.Attributes["QueueArn"],
		"maxReceiveCount":     maxReceiveCount,
	})
	queue, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name),
		Attributes: map[string]string{
			"VisibilityTimeout": strconv.Itoa(int(visibility / time.Second)),
			"RedrivePolicy":     string(policy),
		},
	})
	if err != nil {
		return r, fmt.Errorf("creating the queue: %w", err)
	}
	r.queueURL = aws.ToString(queue.QueueUrl)
	err = provision.CreateNewTable(ctx, ddb, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
	})
	if err != nil {
		r.table = ""
		return r, err
	}
	return r, nil
}

func (r *resources) delete(sqsClient *sqs.Client, ddb *dynamodb.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, url := range []string{r.queueURL, r.deadLetterURL} {
		if url != "" {
			_, _ = sqsClient.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		}
	}
	if r.table != "" {
		_, _ = ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(r.table)})
	}
}

// deadLetter is one message read back from the dead-letter queue.
type deadLetter struct {
	key, fault           string
	receiveCount         int    // ApproximateReceiveCount, this read included
	failureReason        string // failure-reason attribute, "" if absent
	failureReceiveCount  int    // failure-receive-count attribute, 0 if absent
	hasFailureAttributes bool
}

// readDeadLetterTimeout bounds how long readDeadLetters waits for messages the queue
// counts but no receive returns: far above what reading a few thousand messages takes on
// the emulator, so reaching it means the queue's count was wrong.
const readDeadLetterTimeout = 2 * time.Minute

// readDeadLetters reads every message of the dead-letter queue once with redrive.Peek
// (which releases them again): as many as the queue counts (the workers are stopped, so
// the count is final), and any more a receive still finds. An empty long poll short of
// the count is not the end (the emulator can return one under load while messages are
// visible); short of the count after readDeadLetterTimeout is an error.
func readDeadLetters(ctx context.Context, client *sqs.Client, url string) ([]deadLetter, error) {
	depth, err := sqsinfo.QueueDepth(ctx, client, url)
	if err != nil {
		return nil, err
	}
	expected := depth.Total()
	peeked, err := redrive.Peek(ctx, client, url, redrive.PeekOptions{
		MaxMessages: expected + sqsinfo.MaxBatchEntries, VisibilityTimeout: 10 * time.Minute, Patience: readDeadLetterTimeout,
	})
	if err != nil {
		return nil, err
	}
	if len(peeked.Messages) < expected {
		return nil, fmt.Errorf("read %d of the %d messages the dead-letter queue counts in %s", len(peeked.Messages), expected, readDeadLetterTimeout)
	}
	out := make([]deadLetter, 0, len(peeked.Messages))
	for _, message := range peeked.Messages {
		var job struct{ Key, Fault string }
		_ = json.Unmarshal([]byte(message.Body), &job)
		_, hasReason := message.MessageAttributes[sqsworker.AttributeFailureReason]
		_, hasCount := message.MessageAttributes[sqsworker.AttributeFailureReceiveCount]
		out = append(out, deadLetter{
			key: job.Key, fault: job.Fault,
			receiveCount:         message.ReceiveCount,
			failureReason:        message.FailureReason,
			failureReceiveCount:  message.FailedReceiveCount,
			hasFailureAttributes: hasReason || hasCount,
		})
	}
	return out, nil
}
