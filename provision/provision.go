// Package provision creates, idempotently, the SQS queues and DynamoDB tables a sqsworker
// deployment uses: a queue with its dead-letter queue and redrive policy (dead-letter queue
// first, then the source queue naming it with maxReceiveCount), and a table with a string
// partition key, billed on demand, with TTL on the attribute it names. `sqsworker create queue` and `sqsworker
// create table` are built on it; the demo, the soak, the bench and the tests use it on the
// local emulator. For production accounts, the Terraform modules in infra/terraform are the
// supported definition (they create the same resources and check more of their inputs).
//
// Provisioning is idempotent: an existing queue is reused and its attributes are set to
// the given values; an existing table is reused when its key matches. With
// Options.Reset, every queue is purged and every table emptied, so a run starts clean:
//
//	resources, err := provision.LoadFile("resources.json") // or build a Resources value
//	if err != nil { return err }
//	result, err := provision.Apply(ctx, sqsClient, dynamoClient, resources, provision.Options{Reset: true})
//	if err != nil { return err }
//	queueURL := result.Queue("webhook-deliveries").URL
//
// See "Configuring a dead-letter queue" and "Amazon SQS queue attributes" (CreateQueue,
// SetQueueAttributes) in the Amazon SQS Developer Guide, and CreateTable and
// UpdateTimeToLive in the DynamoDB API Reference.
package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// SQSAPI is the part of the SQS client that provisioning uses.
type SQSAPI interface {
	CreateQueue(ctx context.Context, input *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueUrl(ctx context.Context, input *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	SetQueueAttributes(ctx context.Context, input *sqs.SetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
	PurgeQueue(ctx context.Context, input *sqs.PurgeQueueInput, optFns ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error)
}

// DynamoDBAPI is the part of the DynamoDB client that provisioning uses.
type DynamoDBAPI interface {
	dynamodb.DescribeTableAPIClient
	CreateTable(ctx context.Context, input *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTimeToLive(ctx context.Context, input *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, input *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	Scan(ctx context.Context, input *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	BatchWriteItem(ctx context.Context, input *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

var (
	_ SQSAPI      = (*sqs.Client)(nil)
	_ DynamoDBAPI = (*dynamodb.Client)(nil)
)

// tableActiveWait bounds the wait for a new table to become ACTIVE, polled with
// DescribeTable every tableWaitMinDelay to tableWaitMaxDelay.
const (
	tableActiveWait   = 2 * time.Minute
	tableWaitMinDelay = 200 * time.Millisecond
	tableWaitMaxDelay = 2 * time.Second
)

// Options changes how [Apply] provisions.
type Options struct {
	// Reset empties the resources after making sure they exist: PurgeQueue on every queue
	// and dead-letter queue (in-flight messages included), and a Scan plus BatchWriteItem
	// deletes on every table. The emulator purges at once; AWS purges within 60 s and
	// allows one purge per queue every 60 s, so Reset is meant for the emulator.
	Reset bool
}

// Result names what [Apply] provisioned.
type Result struct {
	// Queues are the provisioned queues, in the order of Resources.Queues.
	Queues []QueueResult
	// Tables are the provisioned tables, in the order of Resources.Tables.
	Tables []TableResult
}

// QueueResult is one provisioned queue (and its dead-letter queue, if any).
type QueueResult struct {
	// Name, URL and ARN are the source queue's.
	Name string
	URL  string
	ARN  string
	// DeadLetterQueueURL and DeadLetterQueueARN are its dead-letter queue's, or "".
	DeadLetterQueueURL string
	DeadLetterQueueARN string
	// Created is true when the source queue did not exist before.
	Created bool
}

// TableResult is one provisioned table.
type TableResult struct {
	// Name is the table's name.
	Name string
	// Created is true when the table did not exist before.
	Created bool
	// TTLWarning is set when TTL could not be turned on. The tables still work; only
	// expired records are not removed by DynamoDB (moto, for one, does not expire items).
	TTLWarning string
	// Deleted counts the items removed by Options.Reset.
	Deleted int
}

// Queue returns the result for the queue named name, or the zero QueueResult.
func (r *Result) Queue(name string) QueueResult {
	for _, queue := range r.Queues {
		if queue.Name == name {
			return queue
		}
	}
	return QueueResult{}
}

// Apply creates (or reuses) every queue and table in resources, dead-letter queues before
// their source queues, and with options.Reset empties them all. It stops at the first error.
func Apply(ctx context.Context, sqsClient SQSAPI, dynamoClient DynamoDBAPI, resources *Resources, options Options) (*Result, error) {
	if err := resources.Validate(); err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	result := &Result{}
	for _, queue := range resources.Queues {
		provisioned, err := applyQueue(ctx, sqsClient, queue, options)
		if err != nil {
			return nil, err
		}
		result.Queues = append(result.Queues, provisioned)
	}
	for _, table := range resources.Tables {
		provisioned, err := applyTable(ctx, dynamoClient, table, options)
		if err != nil {
			return nil, err
		}
		result.Tables = append(result.Tables, provisioned)
	}
	return result, nil
}

func applyQueue(ctx context.Context, client SQSAPI, queue Queue, options Options) (QueueResult, error) {
	result := QueueResult{Name: queue.Name}
	attributes := map[string]string{}
	setNumber := func(name sqstypes.QueueAttributeName, value int) {
		if value != 0 {
			attributes[string(name)] = strconv.Itoa(value)
		}
	}
	setNumber(sqstypes.QueueAttributeNameVisibilityTimeout, queue.VisibilityTimeoutSeconds)
	setNumber(sqstypes.QueueAttributeNameMessageRetentionPeriod, queue.MessageRetentionSeconds)
	setNumber(sqstypes.QueueAttributeNameReceiveMessageWaitTimeSeconds, queue.ReceiveWaitTimeSeconds)
	setNumber(sqstypes.QueueAttributeNameMaximumMessageSize, queue.MaximumMessageSize)
	if dlq := queue.DeadLetterQueue; dlq != nil {
		dlqAttributes := map[string]string{}
		if dlq.MessageRetentionSeconds != 0 {
			dlqAttributes[string(sqstypes.QueueAttributeNameMessageRetentionPeriod)] = strconv.Itoa(dlq.MessageRetentionSeconds)
		}
		if queue.MaximumMessageSize != 0 {
			dlqAttributes[string(sqstypes.QueueAttributeNameMaximumMessageSize)] = strconv.Itoa(queue.MaximumMessageSize)
		}
		var err error
		result.DeadLetterQueueURL, result.DeadLetterQueueARN, _, err = ensureQueue(ctx, client, dlq.Name, queue.FIFO, dlqAttributes, options)
		if err != nil {
			return result, err
		}
		policy, err := json.Marshal(map[string]any{
			"deadLetterTargetArn": result.DeadLetterQueueARN,
			"maxReceiveCount":     queue.MaxReceiveCount,
		})
		if err != nil {
			return result, fmt.Errorf("provision: %w", err)
		}
		attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)] = string(policy)
	}
	var err error
	result.URL, result.ARN, result.Created, err = ensureQueue(ctx, client, queue.Name, queue.FIFO, attributes, options)
	return result, err
}

// ensureQueue creates the queue, or sets the attributes of the existing one (CreateQueue
// fails with QueueNameExists when an existing queue's attributes differ), then purges it
// if asked. It returns the URL, the ARN and whether the queue was created.
func ensureQueue(ctx context.Context, client SQSAPI, name string, fifo bool, attributes map[string]string, options Options) (url, arn string, created bool, err error) {
	url, err = queueURL(ctx, client, name)
	switch {
	case err != nil:
		return "", "", false, err
	case url == "":
		createAttributes := map[string]string{}
		for key, value := range attributes {
			createAttributes[key] = value
		}
		if fifo {
			createAttributes[string(sqstypes.QueueAttributeNameFifoQueue)] = "true"
		}
		output, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: createAttributes})
		if err != nil {
			return "", "", false, fmt.Errorf("provision: creating queue %s: %w", name, err)
		}
		url, created = aws.ToString(output.QueueUrl), true
	case len(attributes) > 0:
		_, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attributes})
		if err != nil {
			return "", "", false, fmt.Errorf("provision: updating attributes of queue %s: %w", name, err)
		}
	}
	output, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn, sqstypes.QueueAttributeNameFifoQueue},
	})
	if err != nil {
		return "", "", false, fmt.Errorf("provision: reading attributes of queue %s: %w", name, err)
	}
	if isFIFO := output.Attributes[string(sqstypes.QueueAttributeNameFifoQueue)] == "true"; isFIFO != fifo {
		return "", "", false, fmt.Errorf("provision: queue %s exists with FifoQueue=%t; delete it to change the queue type", name, isFIFO)
	}
	arn = output.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if options.Reset && !created {
		if _, err := client.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
			return "", "", false, fmt.Errorf("provision: purging queue %s: %w", name, err)
		}
	}
	return url, arn, created, nil
}

// queueURL returns the URL of the queue named name, or "" when there is none.
func queueURL(ctx context.Context, client SQSAPI, name string) (string, error) {
	output, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err == nil {
		return aws.ToString(output.QueueUrl), nil
	}
	// By type first: the SDK decodes the error shape from the body, while ErrorCode() is
	// the X-Amzn-Query-Error header's code, which endpoints spell differently (AWS:
	// AWS.SimpleQueueService.NonExistentQueue; ElasticMQ: com.amazonaws.sqs#QueueDoesNotExist).
	if _, ok := errors.AsType[*sqstypes.QueueDoesNotExist](err); ok {
		return "", nil
	}
	var apiError smithy.APIError
	if errors.As(err, &apiError) {
		switch apiError.ErrorCode() {
		case "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue":
			return "", nil
		}
	}
	return "", fmt.Errorf("provision: looking up queue %s: %w", name, err)
}

func applyTable(ctx context.Context, client DynamoDBAPI, table Table, options Options) (TableResult, error) {
	result := TableResult{Name: table.Name}
	description, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table.Name)})
	var notFound *dynamodbtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		_, err = client.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:   aws.String(table.Name),
			BillingMode: dynamodbtypes.BillingModePayPerRequest,
			AttributeDefinitions: []dynamodbtypes.AttributeDefinition{
				{AttributeName: aws.String(table.PartitionKey), AttributeType: dynamodbtypes.ScalarAttributeTypeS},
			},
			KeySchema: []dynamodbtypes.KeySchemaElement{
				{AttributeName: aws.String(table.PartitionKey), KeyType: dynamodbtypes.KeyTypeHash},
			},
		})
		var inUse *dynamodbtypes.ResourceInUseException
		if errors.As(err, &inUse) {
			// The table was absent when this call began and exists now: created by this
			// call's first attempt, whose answer was lost and which the SDK retried (seen
			// on the emulator under load), or by a concurrent creator. Either way it is
			// ours to use once its key schema matches.
			if description, err = client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table.Name)}); err != nil {
				return result, fmt.Errorf("provision: describing table %s: %w", table.Name, err)
			}
			if err := checkKeySchema(description.Table, table); err != nil {
				return result, err
			}
		} else if err != nil {
			return result, fmt.Errorf("provision: creating table %s: %w", table.Name, err)
		}
		result.Created = true
	case err != nil:
		return result, fmt.Errorf("provision: describing table %s: %w", table.Name, err)
	default:
		if err := checkKeySchema(description.Table, table); err != nil {
			return result, err
		}
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = tableWaitMinDelay
		o.MaxDelay = tableWaitMaxDelay
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table.Name)}, tableActiveWait); err != nil {
		return result, fmt.Errorf("provision: waiting for table %s to become active: %w", table.Name, err)
	}
	if table.TTLAttribute != "" {
		result.TTLWarning = enableTTL(ctx, client, table)
	}
	if options.Reset && !result.Created {
		result.Deleted, err = emptyTable(ctx, client, table)
		if err != nil {
			return result, err
		}
	}
	return result, nil
}

func checkKeySchema(description *dynamodbtypes.TableDescription, table Table) error {
	if description == nil {
		return nil
	}
	keyType := map[string]dynamodbtypes.ScalarAttributeType{}
	for _, definition := range description.AttributeDefinitions {
		keyType[aws.ToString(definition.AttributeName)] = definition.AttributeType
	}
	schema := description.KeySchema
	if len(schema) != 1 || aws.ToString(schema[0].AttributeName) != table.PartitionKey ||
		schema[0].KeyType != dynamodbtypes.KeyTypeHash || keyType[table.PartitionKey] != dynamodbtypes.ScalarAttributeTypeS {
		return fmt.Errorf("provision: table %s exists with a different key; want only the string partition key %q", table.Name, table.PartitionKey)
	}
	return nil
}

// enableTTL turns TTL on for table.TTLAttribute unless it already is, and returns a
// warning (never an error) when that fails: the emulator may not support it.
func enableTTL(ctx context.Context, client DynamoDBAPI, table Table) string {
	current, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table.Name)})
	if err == nil && current.TimeToLiveDescription != nil {
		status := current.TimeToLiveDescription.TimeToLiveStatus
		attribute := aws.ToString(current.TimeToLiveDescription.AttributeName)
		enabled := status == dynamodbtypes.TimeToLiveStatusEnabled || status == dynamodbtypes.TimeToLiveStatusEnabling
		if enabled && attribute == table.TTLAttribute {
			return ""
		}
		if enabled {
			return fmt.Sprintf("table %s has TTL on %q, not %q; change it by hand (AWS allows one TTL change per hour)", table.Name, attribute, table.TTLAttribute)
		}
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table.Name),
		TimeToLiveSpecification: &dynamodbtypes.TimeToLiveSpecification{
			AttributeName: aws.String(table.TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Sprintf("table %s: TTL on %q not enabled: %v", table.Name, table.TTLAttribute, err)
	}
	return ""
}

// emptyTable deletes every item of the table (Scan of the key, BatchWriteItem deletes of
// 25) and returns how many it deleted. Unprocessed deletes are retried.
func emptyTable(ctx context.Context, client DynamoDBAPI, table Table) (int, error) {
	deleted := 0
	var startKey map[string]dynamodbtypes.AttributeValue
	for {
		page, err := client.Scan(ctx, &dynamodb.ScanInput{
			TableName:                aws.String(table.Name),
			ProjectionExpression:     aws.String("#key"),
			ExpressionAttributeNames: map[string]string{"#key": table.PartitionKey},
			ConsistentRead:           aws.Bool(true),
			ExclusiveStartKey:        startKey,
		})
		if err != nil {
			return deleted, fmt.Errorf("provision: scanning table %s: %w", table.Name, err)
		}
		for start := 0; start < len(page.Items); start += 25 {
			var requests []dynamodbtypes.WriteRequest
			for _, item := range page.Items[start:min(start+25, len(page.Items))] {
				requests = append(requests, dynamodbtypes.WriteRequest{DeleteRequest: &dynamodbtypes.DeleteRequest{Key: item}})
			}
			if err := batchWrite(ctx, client, table.Name, requests); err != nil {
				return deleted, err
			}
			deleted += len(requests)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return deleted, nil
		}
		startKey = page.LastEvaluatedKey
	}
}

func batchWrite(ctx context.Context, client DynamoDBAPI, table string, requests []dynamodbtypes.WriteRequest) error {
	for attempt := 0; len(requests) > 0; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(min(attempt, 10)) * 100 * time.Millisecond):
			}
		}
		output, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]dynamodbtypes.WriteRequest{table: requests},
		})
		if err != nil {
			return fmt.Errorf("provision: deleting items of table %s: %w", table, err)
		}
		requests = output.UnprocessedItems[table]
		if attempt == 20 && len(requests) > 0 {
			return fmt.Errorf("provision: deleting items of table %s: %d deletes still unprocessed after 20 retries", table, len(requests))
		}
	}
	return nil
}
