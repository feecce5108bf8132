package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/sqsinfo"
	"github.com/sqsworker/sqsworker/table"
)

func deleteQueueByName(t *testing.T, client *sqs.Client, name string) {
	t.Cleanup(func() {
		if output, err := client.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)}); err == nil {
			_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: output.QueueUrl})
		}
	})
}

// TestCreateQueueWithDeadLetterQueue creates a standard and a FIFO queue with the CLI and
// reads back what SQS has: the redrive policy, maxReceiveCount, visibility and type.
func TestCreateQueueWithDeadLetterQueue(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	for _, fifo := range []bool{false, true} {
		name := testenv.UniqueName(t)
		args := []string{"create", "queue"}
		if fifo {
			name += ".fifo"
			args = append(args, "--fifo")
		}
		dlq := defaultDLQName(name)
		deleteQueueByName(t, client, name)
		deleteQueueByName(t, client, dlq)
		created := decode[createdQueue](t, want(t, exitOK, append(args, name, "--visibility", "45s", "--max-receives", "7", "-o", "json")...))
		if !created.Created || created.URL == "" || created.DeadLetterQueueARN == "" {
			t.Fatalf("create queue %s: %+v", name, created)
		}
		queue, err := sqsinfo.LoadQueue(context.Background(), client, created.URL)
		if err != nil {
			t.Fatal(err)
		}
		if queue.FIFO != fifo || queue.VisibilityTimeout.Seconds() != 45 || queue.RedrivePolicy == nil ||
			queue.RedrivePolicy.MaxReceiveCount != 7 || queue.RedrivePolicy.DeadLetterTargetARN != created.DeadLetterQueueARN ||
			!strings.HasSuffix(created.DeadLetterQueueARN, ":"+dlq) {
			t.Errorf("queue %s as SQS has it: %+v (redrive %+v), want fifo %v, visibility 45 s, maxReceiveCount 7 -> %s", name, queue, queue.RedrivePolicy, fifo, dlq)
		}
		// Again: reused, not an error.
		r := want(t, exitOK, append(args, name, "--visibility", "45s", "--max-receives", "7")...)
		if !strings.HasPrefix(r.stdout, "Updated existing") {
			t.Errorf("second create printed %q", r.stdout)
		}
	}
	for _, bad := range [][]string{
		{"create", "queue", "x.fifo"},
		{"create", "queue", "x", "--max-receives", "0"},
		{"create", "queue", "x", "--visibility", "1.5s"},
		{"create", "queue", "x", "--dlq-retention", "24h", "--retention", "48h"},
	} {
		if r := cli(t, nil, bad...); r.code != exitUsage {
			t.Errorf("%v: exit %d (%s), want %d", bad, r.code, r.stderr, exitUsage)
		}
	}
}

// TestCreateTable creates the table and reads back its key and TTL: package table's
// PartitionKey and TTLAttribute, the one definition.
func TestCreateTable(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDB(t)
	name := testenv.UniqueName(t)
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	r := want(t, exitOK, "create", "table", name, "-o", "json")
	var created createdTable
	if err := json.Unmarshal([]byte(r.stdout), &created); err != nil || !created.Created {
		t.Fatalf("create table: %v %q", err, r.stdout)
	}
	description, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if key := description.Table.KeySchema; len(key) != 1 || aws.ToString(key[0].AttributeName) != table.PartitionKey {
		t.Errorf("key schema %+v, want the string key id", key)
	}
	ttl, err := client.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if created.TTLWarning == "" && (ttl.TimeToLiveDescription == nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != table.TTLAttribute) {
		t.Errorf("TTL %+v, want on expiration", ttl.TimeToLiveDescription)
	}
	if r := want(t, exitOK, "create", "table", name); !strings.HasPrefix(r.stdout, "Reused existing table") {
		t.Errorf("second create printed %q", r.stdout)
	}
}
