package lambda_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
)

// The Lambda host runs a ServeMux unchanged: a known job type is handled, an unknown one
// and a malformed body go to the dead-letter queue with their reasons, and the batch
// response reports no failure.
func TestBatchHandlerRunsAServeMux(t *testing.T) {
	t.Parallel()
	_, event := fixture(t, "sqs_event.json")
	types := []string{"order.created", "invoice.paid", "order.created"}
	for i := range event.Records {
		event.Records[i].MessageAttributes = map[string]events.SQSMessageAttribute{
			sqsworker.AttributeJobType: {DataType: "String", StringValue: aws.String(types[i])},
		}
	}
	event.Records[2].Body = `{"order":"A-3","extra":true}`
	payload, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}

	var handled []string
	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "order.created", func(ctx context.Context, job struct{ Order string }) error {
		handled = append(handled, job.Order)
		return nil
	})
	fake := &recordingSQS{}
	response, err := invoke(context.Background(), batchFunc(t, mux, lambda.WithSQSClient(fake), lambda.WithConcurrency(1)), payload)
	if err != nil {
		t.Fatal(err)
	}
	if response != `{"batchItemFailures":[]}` {
		t.Errorf("response = %s", response)
	}
	if len(handled) != 1 || handled[0] != "A-1" {
		t.Errorf("handled %v, want [A-1]", handled)
	}
	reasons := map[string]bool{}
	for _, sent := range fake.sent {
		reasons[aws.ToString(sent.MessageAttributes[sqsworker.AttributeFailureReason].StringValue)] = true
	}
	if len(fake.sent) != 2 || !reasons["UnknownJobType"] || !reasons["MalformedBody"] {
		t.Errorf("dead-letter sends with reasons %v, want UnknownJobType and MalformedBody", reasons)
	}
}
