package outboxdynamo_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/outbox/outboxtest"
	"github.com/sqsworker/sqsworker/producer"
)

// BenchmarkRelay measures the container relay on moto (see outboxtest.BenchmarkRelay):
//
//	make bench-outbox   (eval "$(localstack/env)" && go test -run '^$' -bench BenchmarkRelay -benchtime 2000x ./outbox/outboxdynamo)
func BenchmarkRelay(b *testing.B) {
	client := testenv.DynamoDB(b)
	o, err := outboxdynamo.New(outboxdynamo.Config{Table: testenv.UniqueName(b)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := client.CreateTable(context.Background(), o.CreateTableInput()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(o.Table())})
	})
	write := func(queueURL string, jobs []producer.Job) {
		items, _, err := o.TransactItems(nil, queueURL, jobs...)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
			b.Fatal(err)
		}
	}
	outboxtest.BenchmarkRelay(b, false, write, func(p *producer.Producer, config outbox.RelayConfig) *outbox.Relay {
		r, err := outboxdynamo.NewRelay(client, o, p, config)
		if err != nil {
			b.Fatal(err)
		}
		return r
	})
}

// BenchmarkCommitToHandler measures commit to handler start through the DynamoDB outbox
// and its container relay (see outboxtest.BenchmarkCommitToHandler); moto serves one
// request at a time, so keep the rate low:
//
//	eval "$(localstack/env)" && OUTBOX_BENCH_RATE=20 OUTBOX_BENCH_LATENCY=10ms go test -run '^$' -bench BenchmarkCommitToHandler -benchtime 400x ./outbox/outboxdynamo
func BenchmarkCommitToHandler(b *testing.B) {
	client := testenv.DynamoDB(b)
	o, err := outboxdynamo.New(outboxdynamo.Config{Table: testenv.UniqueName(b)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := client.CreateTable(context.Background(), o.CreateTableInput()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(o.Table())})
	})
	commit := func(queueURL string, job producer.Job) outbox.Entry {
		items, entries, err := o.TransactItems(nil, queueURL, job)
		if err == nil {
			_, err = client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: items})
		}
		if err != nil {
			b.Error(err)
			return outbox.Entry{}
		}
		return entries[0]
	}
	outboxtest.BenchmarkCommitToHandler(b, commit, func(p *producer.Producer, config outbox.RelayConfig) *outbox.Relay {
		r, err := outboxdynamo.NewRelay(client, o, p, config)
		if err != nil {
			b.Fatal(err)
		}
		return r
	})
}
