package provision

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

func TestLoadFileRejects(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string // substrings of the error, all reported together
	}{
		{
			name:    "unknown field",
			content: `{"queues":[{"name":"q","visibility_timeout":30}]}`,
			want:    []string{`unknown field "visibility_timeout"`},
		},
		{
			name: "every problem at once",
			content: `{"queues":[{"name":"q.fifo","visibility_timeout_seconds":50000,"receive_wait_time_seconds":21,
				"dead_letter_queue":{"name":"q-dlq"}}],"tables":[{"name":"t"}]}`,
			want: []string{
				"ends in .fifo exactly when fifo is true",
				"visibility_timeout_seconds is 50000",
				"receive_wait_time_seconds is 21",
				"max_receive_count is 0",
				"partition_key is empty",
			},
		},
		{
			name:    "max receive count without dead-letter queue",
			content: `{"queues":[{"name":"q","max_receive_count":3}]}`,
			want:    []string{"max_receive_count is set but there is no dead_letter_queue"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "resources.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadFile(path)
			if err == nil {
				t.Fatal("LoadFile succeeded, want an error")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

// TestApplyOnEmulator provisions a uniquely named copy of localstack/resources.json twice
// (the second run reuses everything), checks the attributes, redrive policy, key schema
// and TTL, then checks that Reset empties the queues and the table.
func TestApplyOnEmulator(t *testing.T) {
	sqsClient, dynamoClient := testenv.SQS(t), testenv.DynamoDB(t)
	ctx := context.Background()

	resources, err := LoadFile(filepath.Join("..", "localstack", "resources.json"))
	if err != nil {
		t.Fatal(err)
	}
	prefix := testenv.UniqueName(t)
	for i := range resources.Queues {
		resources.Queues[i].Name = prefix + "-" + resources.Queues[i].Name
		resources.Queues[i].DeadLetterQueue.Name = prefix + "-" + resources.Queues[i].DeadLetterQueue.Name
	}
	for i := range resources.Tables {
		resources.Tables[i].Name = prefix + "-" + resources.Tables[i].Name
	}
	// Go through a temporary file, as the demo goes through localstack/resources.json.
	path := filepath.Join(t.TempDir(), "resources.json")
	data, _ := json.Marshal(resources)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	resources, err = LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spec, table := resources.Queues[0], resources.Tables[0]

	first, err := Apply(ctx, sqsClient, dynamoClient, resources, Options{})
	if err != nil {
		t.Fatalf("first Apply: %v", err)
	}
	queue := first.Queue(spec.Name)
	t.Cleanup(func() {
		for _, url := range []string{queue.URL, queue.DeadLetterQueueURL} {
			_, _ = sqsClient.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		}
		_, _ = dynamoClient.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table.Name)})
	})
	if !queue.Created || !first.Tables[0].Created {
		t.Errorf("first Apply: created queue %t, table %t; want both created", queue.Created, first.Tables[0].Created)
	}
	if first.Tables[0].TTLWarning != "" {
		t.Logf("emulator difference: %s", first.Tables[0].TTLWarning)
	}

	second, err := Apply(ctx, sqsClient, dynamoClient, resources, Options{})
	if err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if again := second.Queue(spec.Name); again.Created || again.URL != queue.URL || again.DeadLetterQueueARN != queue.DeadLetterQueueARN || second.Tables[0].Created {
		t.Errorf("second Apply = %+v, %+v; want the same resources, reused", again, second.Tables[0])
	}

	attributes := testenv.QueueAttributes(t, sqsClient, queue.URL)
	wantAttributes := map[string]string{
		"VisibilityTimeout":             "30",
		"ReceiveMessageWaitTimeSeconds": "20",
	}
	for name, want := range wantAttributes {
		if attributes[name] != want {
			t.Errorf("source %s = %q, want %q", name, attributes[name], want)
		}
	}
	t.Run("size and retention", func(t *testing.T) {
		testenv.SkipOn(t, testenv.ElasticMQIgnoresSizeAndRetention)
		if attributes["MessageRetentionPeriod"] != "345600" || attributes["MaximumMessageSize"] != "1048576" {
			t.Errorf("source retention %s, maximum size %s; want 345600 and 1048576",
				attributes["MessageRetentionPeriod"], attributes["MaximumMessageSize"])
		}
		dlqAttributes := testenv.QueueAttributes(t, sqsClient, queue.DeadLetterQueueURL)
		if dlqAttributes["MessageRetentionPeriod"] != "1209600" || dlqAttributes["MaximumMessageSize"] != "1048576" {
			t.Errorf("dead-letter queue retention %s, maximum size %s; want 1209600 and 1048576",
				dlqAttributes["MessageRetentionPeriod"], dlqAttributes["MaximumMessageSize"])
		}
	})
	var policy struct {
		DeadLetterTargetARN string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(attributes["RedrivePolicy"]), &policy); err != nil {
		t.Fatalf("RedrivePolicy %q: %v", attributes["RedrivePolicy"], err)
	}
	if policy.DeadLetterTargetARN != queue.DeadLetterQueueARN || strings.Trim(string(policy.MaxReceiveCount), `"`) != "5" {
		t.Errorf("RedrivePolicy = %s, want the dead-letter queue %s and maxReceiveCount 5", attributes["RedrivePolicy"], queue.DeadLetterQueueARN)
	}
	description, err := dynamoClient.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table.Name)})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkKeySchema(description.Table, table); err != nil {
		t.Error(err)
	}
	if billing := description.Table.BillingModeSummary; billing == nil || billing.BillingMode != dynamodbtypes.BillingModePayPerRequest {
		t.Errorf("billing mode = %+v, want PAY_PER_REQUEST", billing)
	}
	ttl, err := dynamoClient.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table.Name)})
	if err != nil || ttl.TimeToLiveDescription == nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "expiration" {
		t.Logf("emulator difference: DescribeTimeToLive = %+v, %v (TTL on expiration not reported)", ttl, err)
	}

	// Fill everything, then Reset must leave it empty.
	for _, url := range []string{queue.URL, queue.DeadLetterQueueURL} {
		for i := 0; i < 3; i++ {
			if _, err := sqsClient.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// One message in flight: a purge removes it too.
	if _, err := sqsClient.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL), MaxNumberOfMessages: 1}); err != nil {
		t.Fatal(err)
	}
	const items = 30 // more than one BatchWriteItem of 25
	for i := 0; i < items; i++ {
		_, err := dynamoClient.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(table.Name),
			Item: map[string]dynamodbtypes.AttributeValue{
				"id":     &dynamodbtypes.AttributeValueMemberS{Value: strings.Repeat("k", i+1)},
				"status": &dynamodbtypes.AttributeValueMemberS{Value: "COMPLETED"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	reset, err := Apply(ctx, sqsClient, dynamoClient, resources, Options{Reset: true})
	if err != nil {
		t.Fatalf("Apply with Reset: %v", err)
	}
	if reset.Tables[0].Deleted != items {
		t.Errorf("Reset deleted %d items, want %d", reset.Tables[0].Deleted, items)
	}
	for _, url := range []string{queue.URL, queue.DeadLetterQueueURL} {
		if visible, inFlight := testenv.Counts(t, sqsClient, url); visible != 0 || inFlight != 0 {
			t.Errorf("after Reset %s holds %d visible and %d in-flight messages, want none", url, visible, inFlight)
		}
	}
	scan, err := dynamoClient.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table.Name), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if scan.Count != 0 {
		t.Errorf("after Reset the table holds %d items, want none", scan.Count)
	}
}

// TestCreateTableWithLostAnswer: the first CreateTable's answer is lost (the proxy resets
// the connection after DynamoDB created the table) and the SDK retries it, which meets
// ResourceInUseException. The table exists with the right key, so applying it succeeds
// (seen as a failed `sqsworker create table` in a clean-clone CI run, where moto's answer
// failed the SDK's CRC32 check and was retried).
func TestCreateTableWithLostAnswer(t *testing.T) {
	t.Parallel()
	direct := testenv.DynamoDB(t)
	proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"))
	proxy.SetRules(faultproxy.Rule{Operations: []string{"CreateTable"}, Fraction: 1, Times: 1, Reset: true})
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	name := testenv.UniqueName(t)
	t.Cleanup(func() {
		_, _ = direct.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	result, err := applyTable(context.Background(), client, Table{Name: name, PartitionKey: "id"}, Options{})
	if err != nil {
		t.Fatalf("applyTable: %v", err)
	}
	if !result.Created {
		t.Errorf("result = %+v, want Created", result)
	}
	var creates []string
	for _, call := range proxy.Calls() {
		if call.Operation == "CreateTable" {
			creates = append(creates, call.Fault)
		}
	}
	if len(creates) != 2 || creates[0] != "reset" {
		t.Fatalf("CreateTable calls %q, want a reset one and its retry", creates)
	}
}

// TestCreateNewTableWithLostAnswer: as above for CreateNewTable, the helper of the demo,
// the soak and the bench (the demo test failed on it in a clean-clone CI run): the first
// attempt's answer is lost, the SDK's retry meets ResourceInUseException, and the table
// is the call's own and ACTIVE when it returns.
func TestCreateNewTableWithLostAnswer(t *testing.T) {
	t.Parallel()
	direct := testenv.DynamoDB(t)
	proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"))
	proxy.SetRules(faultproxy.Rule{Operations: []string{"CreateTable"}, Fraction: 1, Times: 1, Reset: true})
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	name := testenv.UniqueName(t)
	t.Cleanup(func() {
		_, _ = direct.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	err := CreateNewTable(context.Background(), client, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          dynamodbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []dynamodbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: dynamodbtypes.ScalarAttributeTypeS}},
		KeySchema:            []dynamodbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: dynamodbtypes.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("CreateNewTable: %v", err)
	}
	var creates []string
	for _, call := range proxy.Calls() {
		if call.Operation == "CreateTable" {
			creates = append(creates, call.Fault)
		}
	}
	if len(creates) != 2 || creates[0] != "reset" {
		t.Fatalf("CreateTable calls %q, want a reset one and its retry", creates)
	}
	description, err := direct.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil || description.Table.TableStatus != dynamodbtypes.TableStatusActive {
		t.Fatalf("DescribeTable = %v, %v; want the table ACTIVE", description, err)
	}
}
