package emf_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/lambda/emf"
)

// visibilityOnly accepts every visibility change and describes the queue without a
// redrive policy (read to tell a record's last attempt); the test sends no permanent
// failure, so no other call is made.
type visibilityOnly struct{ lambda.SQSAPI }

func (visibilityOnly) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"VisibilityTimeout": "30"}}, nil
}

func (visibilityOnly) ChangeMessageVisibilityBatch(_ context.Context, input *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	output := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, entry := range input.Entries {
		output.Successful = append(output.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: entry.Id})
	}
	return output, nil
}

// validateEMF checks one line against the embedded metric format specification
// (CloudWatch_Embedded_Metric_Format_Specification): a JSON object with an "_aws"
// member holding an integer Timestamp (ms) and CloudWatchMetrics, a non-empty array of
// directives, each with a Namespace of 1 to 255 characters, Dimensions (arrays of at
// most 30 dimension names, each a top-level string member) and Metrics (at most 100,
// each with a Name and a standard Unit, whose value is a top-level number or array of
// at most 100 numbers).
func validateEMF(line []byte) error {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(line, &root); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	var aws struct {
		Timestamp         *json.Number
		CloudWatchMetrics []struct {
			Namespace  *string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit *string }
		}
	}
	raw, ok := root["_aws"]
	if !ok {
		return errors.New("no _aws member")
	}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber()
	if err := decoder.Decode(&aws); err != nil {
		return fmt.Errorf("_aws: %w", err)
	}
	if aws.Timestamp == nil {
		return errors.New("_aws.Timestamp missing")
	}
	if _, err := aws.Timestamp.Int64(); err != nil {
		return fmt.Errorf("_aws.Timestamp %s is not an integer of milliseconds", *aws.Timestamp)
	}
	if len(aws.CloudWatchMetrics) == 0 {
		return errors.New("_aws.CloudWatchMetrics is empty")
	}
	units := map[string]bool{}
	for _, unit := range strings.Fields("Seconds Microseconds Milliseconds Bytes Kilobytes Megabytes Gigabytes Terabytes Bits Kilobits Megabits Gigabits Terabits Percent Count Bytes/Second Kilobytes/Second Megabytes/Second Gigabytes/Second Terabytes/Second Bits/Second Kilobits/Second Megabits/Second Gigabits/Second Terabits/Second Count/Second None") {
		units[unit] = true
	}
	for _, d := range aws.CloudWatchMetrics {
		if d.Namespace == nil || len(*d.Namespace) < 1 || len(*d.Namespace) > 255 {
			return errors.New("a directive's Namespace is missing or not 1..255 characters")
		}
		if d.Dimensions == nil {
			return errors.New("a directive has no Dimensions")
		}
		for _, set := range d.Dimensions {
			if len(set) > 30 {
				return fmt.Errorf("a dimension set has %d dimensions, over 30", len(set))
			}
			for _, name := range set {
				var value string
				if err := json.Unmarshal(root[name], &value); err != nil {
					return fmt.Errorf("dimension %q is not a top-level string member", name)
				}
			}
		}
		if len(d.Metrics) == 0 || len(d.Metrics) > 100 {
			return fmt.Errorf("a directive has %d metrics, not 1..100", len(d.Metrics))
		}
		for _, m := range d.Metrics {
			if m.Name == nil || *m.Name == "" {
				return errors.New("a metric has no Name")
			}
			if m.Unit != nil && !units[*m.Unit] {
				return fmt.Errorf("metric %s has unit %q, not a CloudWatch unit", *m.Name, *m.Unit)
			}
			var number float64
			if err := json.Unmarshal(root[*m.Name], &number); err != nil {
				var numbers []float64
				if err := json.Unmarshal(root[*m.Name], &numbers); err != nil || len(numbers) > 100 {
					return fmt.Errorf("metric %s has no top-level number value", *m.Name)
				}
			}
		}
	}
	return nil
}

func TestOneLinePerInvocation(t *testing.T) {
	var out bytes.Buffer
	now := time.UnixMilli(1_764_583_200_000)
	recorder := emf.New(emf.Config{Namespace: "orders-worker", Writer: &out, Now: func() time.Time { return now }})
	handler, err := lambda.NewBatchHandler(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		switch m.Body {
		case "fail":
			return errors.New("transient")
		case "defer":
			return sqsworker.Defer(time.Minute, "NotYet")
		}
		return nil
	}), lambda.WithObserver(recorder), lambda.WithSQSClient(visibilityOnly{}), lambda.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	invoke := recorder.Wrap(handler.Handle)
	const arn = "arn:aws:sqs:eu-west-1:123456789012:orders"
	event := func(bodies ...string) events.SQSEvent {
		var e events.SQSEvent
		for i, body := range bodies {
			e.Records = append(e.Records, events.SQSMessage{
				MessageId: fmt.Sprint("m", i), ReceiptHandle: fmt.Sprint("r", i), Body: body, EventSourceARN: arn,
				Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": fmt.Sprint(time.Now().Add(-3 * time.Second).UnixMilli())},
			})
		}
		return e
	}
	_, err = invoke(context.Background(), event("ok", "ok", "fail", "defer"))
	require.NoError(t, err)
	_, err = invoke(context.Background(), event("ok"))
	require.NoError(t, err)

	lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
	require.Len(t, lines, 2, "one line per invocation")
	for _, line := range lines {
		require.NoError(t, validateEMF(line), "%s", line)
	}
	var first map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &first))
	require.Equal(t, "orders", first[emf.DimensionQueue])
	require.EqualValues(t, now.UnixMilli(), first["_aws"].(map[string]any)["Timestamp"])
	for name, want := range map[string]float64{"Received": 4, "Succeeded": 2, "Failed": 1, "Deferred": 1, "DeadLettered": 0, "Released": 0, "Abandoned": 0} {
		require.Equal(t, want, first[name], name)
	}
	require.GreaterOrEqual(t, first["ReceiveLagMax"], float64(3000))
}

func TestValidatorRejects(t *testing.T) {
	for _, line := range []string{
		`{"Received":1}`,
		`{"_aws":{"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[[]],"Metrics":[{"Name":"Received","Unit":"Count"}]}]},"Received":1}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["Q"]],"Metrics":[{"Name":"Received","Unit":"Count"}]}]},"Received":1}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[[]],"Metrics":[{"Name":"Received","Unit":"Count"}]}]}}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[[]],"Metrics":[{"Name":"Received","Unit":"Things"}]}]},"Received":1}`,
	} {
		require.Error(t, validateEMF([]byte(line)), line)
	}
}
