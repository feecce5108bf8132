package claimcheck_test

// Interoperability with the AWS SQS extended client for Python (amazon-sqs-extended-client
// on PyPI, pinned in testdata/interop/requirements.txt), on the emulator: a message it
// sends is handled by our poller, and one our store sends is read by it.

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
)

var (
	peerOnce   sync.Once
	peerPython string
	peerErr    error
)

// pythonPeer installs the Python extended client (once per test binary, into
// localstack/.venv-interop) and returns the venv's python. The install fails the test,
// never skips it.
func pythonPeer(t *testing.T) string {
	t.Helper()
	peerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var stderr bytes.Buffer
		command := exec.CommandContext(ctx, "testdata/interop/setup")
		command.Stderr = &stderr
		output, err := command.Output()
		if err != nil {
			peerErr = err
			peerPython = stderr.String()
			return
		}
		peerPython = strings.TrimSpace(string(output))
	})
	if peerErr != nil {
		t.Fatalf("installing the Python extended client (testdata/interop/setup): %v\n%s", peerErr, peerPython)
	}
	return peerPython
}

// runPeer runs testdata/interop/extended_client.py with args and stdin and decodes its
// JSON output into out.
func runPeer(t *testing.T, stdin string, out any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	command := exec.CommandContext(ctx, pythonPeer(t), append([]string{"testdata/interop/extended_client.py"}, args...)...)
	command.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	command.Stderr = &stderr
	output, err := command.Output()
	require.NoError(t, err, "extended_client.py %s: %s", strings.Join(args, " "), stderr.String())
	require.NoError(t, json.Unmarshal(output, out), "extended_client.py output %.200q", output)
}

func TestPythonExtendedClientMessageIsHandledByOurPollerOnEmulator(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"current", "legacy"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			client, s3client := testenv.SQS(t), s3Client(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
			bucket := newBucket(t, s3client)
			body := largeBody("from-python-" + format)

			var sent struct{ MessageId string }
			runPeer(t, body, &sent, "send", queue.URL, bucket, format)
			require.NotEmpty(t, sent.MessageId)
			require.Len(t, objectKeys(t, s3client, bucket), 1, "the Python client stored the body in S3")
			wantAttribute := map[string]string{"current": claimcheck.AttributePayloadSize, "legacy": claimcheck.LegacyAttributePayloadSize}[format]
			raw := receiveOne(t, client, queue.URL) // as it is on the queue
			assert.Contains(t, raw.MessageAttributes, wantAttribute)
			// The bytes the library writes: json.dumps's spacing, the class of the format
			// (as in testdata/wire/python-1.0.1-*.json).
			class := map[string]string{"current": claimcheck.PointerClass, "legacy": claimcheck.LegacyPointerClass}[format]
			assert.Equal(t, `["`+class+`", {"s3BucketName": "`+bucket+`", "s3Key": "`+objectKeys(t, s3client, bucket)[0]+`"}]`, aws.ToString(raw.Body))
			_, err := client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(queue.URL), ReceiptHandle: raw.ReceiptHandle, VisibilityTimeout: 0,
			})
			require.NoError(t, err)

			var calls handled
			cleaner := newCleaner(t, s3client)
			server := startPoller(t, client, s3client, cleaner, []claimcheck.Location{{Bucket: bucket}}, poller.Config{QueueURL: queue.URL}, sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
				calls.add(m)
				return nil
			}))
			testenv.Eventually(t, patience, "the Python client's message handled and deleted, and its payload", func() bool {
				return server.Stats().Deleted == 1 && cleaner.Stats().Deleted == 1
			})
			assert.Empty(t, objectKeys(t, s3client, bucket), "the payload the Python client stored is deleted after the message")

			got := calls.all()
			require.Len(t, got, 1)
			assert.Equal(t, sent.MessageId, got[0].id)
			assert.True(t, got[0].body == body, "the handler got the payload the Python client stored (%d bytes)", len(got[0].body))
			assert.NotContains(t, got[0].attributes, wantAttribute)
		})
	}
}

func TestOurProducersMessageIsReadByThePythonExtendedClientOnEmulator(t *testing.T) {
	t.Parallel()
	client, s3client := testenv.SQS(t), s3Client(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	jobs, store := jobProducer(t, client, s3client)
	body := largeBody("from-go")
	pointer := sendOffloaded(t, jobs, store, queue.URL, body)

	var received struct {
		MessageId         string
		Body              string
		MessageAttributes map[string]struct{ StringValue, DataType string }
	}
	runPeer(t, "", &received, "receive", queue.URL, pointer.Bucket, "10")

	require.NotEmpty(t, received.MessageId, "the Python client received the message")
	assert.True(t, received.Body == body, "the Python client read the payload from S3 (%d bytes)", len(received.Body))
	assert.NotContains(t, received.MessageAttributes, claimcheck.AttributePayloadSize, "the library recognised the pointer and removed its attribute")
	assert.Equal(t, "resize", received.MessageAttributes[sqsworker.AttributeJobType].StringValue)
}
