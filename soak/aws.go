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
	_, err = ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
	})
	if err != nil {
		r.table = ""
		return r, fmt.Errorf("creating the table: %w", err)
	}
	waiter := dynamodb.NewTableExistsWaiter(ddb)
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		return r, fmt.Errorf("waiting for the table: %w", err)
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

// queueDepth returns visible + in flight + delayed messages.
func queueDepth(ctx context.Context, client *sqs.Client, url string) (visible, total int, err error) {
	output, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return 0, 0, err
	}
	for name, value := range output.Attributes {
		n, _ := strconv.Atoi(value)
		total += n
		if name == string(sqstypes.QueueAttributeNameApproximateNumberOfMessages) {
			visible = n
		}
	}
	return visible, total, nil
}

// deadLetter is one message read back from the dead-letter queue.
type deadLetter struct {
	key, fault           string
	receiveCount         int    // ApproximateReceiveCount, this read included
	failureReason        string // failure-reason attribute, "" if absent
	failureReceiveCount  int    // failure-receive-count attribute, 0 if absent
	hasFailureAttributes bool
}

// readDeadLetterTimeout bounds readDeadLetters: far above what reading a few thousand
// messages takes on the emulator, so reaching it means the queue's count was wrong.
const readDeadLetterTimeout = 2 * time.Minute

// readDeadLetters receives every message of the dead-letter queue once (a long
// visibility timeout keeps read messages hidden): as many as the queue counts (the workers
// are stopped, so the count is final), then until a receive with no wait finds nothing
// more. An empty long poll short of the count is not the end: the emulator can return one
// under load while messages are visible.
func readDeadLetters(ctx context.Context, client *sqs.Client, url string) ([]deadLetter, error) {
	var out []deadLetter
	_, expected, err := queueDepth(ctx, client, url)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(readDeadLetterTimeout)
	for {
		reached := len(out) >= expected
		if !reached && time.Now().After(deadline) {
			return out, fmt.Errorf("read %d of the %d messages the dead-letter queue counts in %s", len(out), expected, readDeadLetterTimeout)
		}
		wait := int32(1)
		if reached {
			wait = 0
		}
		output, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(url),
			MaxNumberOfMessages:         10,
			WaitTimeSeconds:             wait,
			VisibilityTimeout:           600,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			return out, err
		}
		if len(output.Messages) == 0 {
			if reached {
				return out, nil
			}
			continue
		}
		for _, message := range output.Messages {
			var job struct{ Key, Fault string }
			_ = json.Unmarshal([]byte(aws.ToString(message.Body)), &job)
			letter := deadLetter{key: job.Key, fault: job.Fault}
			letter.receiveCount, _ = strconv.Atoi(message.Attributes["ApproximateReceiveCount"])
			if value, ok := message.MessageAttributes["failure-reason"]; ok {
				letter.failureReason = aws.ToString(value.StringValue)
				letter.hasFailureAttributes = true
			}
			if value, ok := message.MessageAttributes["failure-receive-count"]; ok {
				letter.failureReceiveCount, _ = strconv.Atoi(aws.ToString(value.StringValue))
				letter.hasFailureAttributes = true
			}
			out = append(out, letter)
		}
	}
}
