package claimcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
)

// wireMessage is a message as another client left it on the queue (testdata/wire; how
// each was captured is in testdata/wire/README.md).
type wireMessage struct {
	Body              string
	MessageAttributes map[string]struct{ DataType, StringValue string }
}

func loadWire(t *testing.T, name string) *sqsworker.Message {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "wire", name))
	require.NoError(t, err)
	var wire wireMessage
	require.NoError(t, json.Unmarshal(data, &wire))
	message := &sqsworker.Message{ID: name, Body: wire.Body, MessageAttributes: map[string]sqsworker.MessageAttribute{}}
	for attributeName, value := range wire.MessageAttributes {
		message.MessageAttributes[attributeName] = sqsworker.MessageAttribute{DataType: value.DataType, StringValue: value.StringValue}
	}
	return message
}

// The bytes each client writes: which size attribute, which class name, which spacing.
// Every one resolves.
func TestOtherClientsWireFormatsAreRead(t *testing.T) {
	uuidKey := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	cases := []struct {
		file      string
		attribute string
		body      string // the body with the bucket and key as captured
	}{
		// Java 2.1.1 with its default configuration writes the legacy attribute name.
		{"java-2.1.1-default.json", LegacyAttributePayloadSize, `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"h5-java-capture","s3Key":"ea2504f4-0976-4f67-a971-c30df6bf3111"}]`},
		// ExtendedPayloadSize only with withLegacyReservedAttributeNameDisabled().
		{"java-2.1.1-legacy-name-disabled.json", AttributePayloadSize, `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"h5-java-capture","s3Key":"a009d514-3856-47c6-b4d8-686a5221b5a2"}]`},
		// Python's json.dumps: a space after each "," and ":".
		{"python-1.0.1-default.json", AttributePayloadSize, `["software.amazon.payloadoffloading.PayloadS3Pointer", {"s3BucketName": "h5-java-capture", "s3Key": "b42ed29c-0944-4eeb-ab3d-68c5bfe2fc78"}]`},
		{"python-1.0.1-use-legacy-attribute.json", LegacyAttributePayloadSize, `["com.amazon.sqs.javamessaging.MessageS3Pointer", {"s3BucketName": "h5-java-capture", "s3Key": "98f0121b-5ca9-4fda-a7de-b544dd79517f"}]`},
		// The bare object of the Node.js client's compatible mode.
		{"dvla-compatible-mode.json", AttributePayloadSize, `{"s3BucketName": "bucket.name", "s3Key": "b03530d9-fae4-493b-a48e-3e1ea969bf1d"}`},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			message := loadWire(t, c.file)
			assert.Equal(t, c.body, message.Body, "the bytes on the queue")
			require.Len(t, message.MessageAttributes, 1)
			assert.Equal(t, "Number", message.MessageAttributes[c.attribute].DataType, "the size attribute is %s", c.attribute)
			pointer, size, ok, err := PointerOf(message)
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Positive(t, size)
			assert.Regexp(t, uuidKey, pointer.Key)
			assert.NoError(t, checkKey(pointer.Key), "the other clients' keys pass the resolver's key check")
		})
	}
}
