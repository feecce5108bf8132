package testenv_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// TestReceiveOutlastsALostAnswer: the first receive that gets messages loses its answer
// (the proxy resets the connection after SQS handed them out; the SDK retries). The
// messages stay hidden for the receive's visibility timeout, longer than the timeout the
// caller gave, and Receive still returns each of them once.
func TestReceiveOutlastsALostAnswer(t *testing.T) {
	t.Parallel()
	direct := testenv.SQS(t)
	queue := testenv.NewQueue(t, direct, testenv.QueueOptions{NoDeadLetterQueue: true})
	for _, body := range []string{"a", "b", "c"} {
		if _, err := direct.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_SQS"))
	proxy.SetRules(faultproxy.Rule{Operations: []string{"ReceiveMessage"}, Fraction: 1, Times: 1, Reset: true, ResponseContains: `"Messages"`})
	client := sqs.NewFromConfig(testenv.AWSConfig(t), func(o *sqs.Options) { o.BaseEndpoint = aws.String(proxy.URL) })

	got := testenv.Receive(t, client, sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL), VisibilityTimeout: 3,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}}, 3, 500*time.Millisecond)
	bodies := map[string]int{}
	for _, m := range got {
		bodies[aws.ToString(m.Body)]++
	}
	if len(got) != 3 || bodies["a"] != 1 || bodies["b"] != 1 || bodies["c"] != 1 {
		t.Fatalf("received %v, want a, b and c once each", bodies)
	}
	reset := 0
	for _, call := range proxy.Calls() {
		if call.Fault == "reset" {
			reset++
		}
	}
	if reset != 1 {
		t.Fatalf("%d receives reset, want 1 (the scenario did not happen)", reset)
	}
}
