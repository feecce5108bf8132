package claimcheck

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
)

func TestPointerBodyIsTheJavaLibrarysJSON(t *testing.T) {
	body := Pointer{Bucket: "my-bucket", Key: "payloads/ABC"}.Body()
	assert.Equal(t, `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"my-bucket","s3Key":"payloads/ABC"}]`, body)
}

func TestParsePointer(t *testing.T) {
	cases := []struct {
		name string
		body string
		want Pointer
	}{
		{"current", `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"}]`, Pointer{"b", "k"}},
		{"legacy class", `["com.amazon.sqs.javamessaging.MessageS3Pointer",{"s3BucketName":"b","s3Key":"k"}]`, Pointer{"b", "k"}},
		{"Python's spacing", `["software.amazon.payloadoffloading.PayloadS3Pointer", {"s3BucketName": "b", "s3Key": "k"}]`, Pointer{"b", "k"}},
		{"unknown fields ignored", `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k","extra":1}]`, Pointer{"b", "k"}},
		{"bare object (Node.js compatible mode)", `{"s3BucketName": "b", "s3Key": "k"}`, Pointer{"b", "k"}},
		{"bare object with leading space", ` {"s3BucketName":"b","s3Key":"k"}`, Pointer{"b", "k"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParsePointer(c.body)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestParsePointerRejects(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":           `hello`,
		"object without key": `{"s3BucketName":"b"}`,
		"other object":       `{"bucket":"b","key":"k"}`,
		"object with number": `{"s3BucketName":"b","s3Key":7}`,
		"string":             `"s3://b/k"`,
		"number":             `7`,
		"three elements":     `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"},1]`,
		"one element":        `["software.amazon.payloadoffloading.PayloadS3Pointer"]`,
		"unknown class":      `["x.Y",{"s3BucketName":"b","s3Key":"k"}]`,
		"class not string":   `[1,{"s3BucketName":"b","s3Key":"k"}]`,
		"no key":             `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b"}]`,
		"no bucket":          `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3Key":"k"}]`,
		"second not obj":     `["software.amazon.payloadoffloading.PayloadS3Pointer","b/k"]`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePointer(body)
			assert.ErrorIs(t, err, ErrMalformedPointer)
		})
	}
}

func TestPointerOf(t *testing.T) {
	body := Pointer{Bucket: "b", Key: "k"}.Body()
	t.Run("unmarked message is not a pointer, whatever its body", func(t *testing.T) {
		_, _, ok, err := PointerOf(&sqsworker.Message{Body: body})
		assert.False(t, ok)
		assert.NoError(t, err)
	})
	for _, name := range []string{AttributePayloadSize, LegacyAttributePayloadSize} {
		t.Run(name, func(t *testing.T) {
			message := &sqsworker.Message{Body: body, MessageAttributes: map[string]sqsworker.MessageAttribute{
				name: {DataType: "Number", StringValue: "1048577"},
			}}
			pointer, size, ok, err := PointerOf(message)
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, Pointer{"b", "k"}, pointer)
			assert.Equal(t, int64(1048577), size)
		})
	}
	t.Run("marked message with a size that is not a byte count", func(t *testing.T) {
		for _, value := range []string{"", "ten", "-1", "1.5", "1e9"} {
			message := &sqsworker.Message{ID: "m-2", Body: body, MessageAttributes: map[string]sqsworker.MessageAttribute{
				LegacyAttributePayloadSize: {DataType: "Number", StringValue: value},
			}}
			_, _, ok, err := PointerOf(message)
			assert.True(t, ok)
			assert.ErrorIs(t, err, ErrMalformedPointer, "size %q", value)
		}
	})
	t.Run("marked message with a malformed body", func(t *testing.T) {
		message := &sqsworker.Message{ID: "m-1", Body: `{"jobId":1}`, MessageAttributes: map[string]sqsworker.MessageAttribute{
			AttributePayloadSize: {DataType: "Number", StringValue: "12"},
		}}
		_, _, ok, err := PointerOf(message)
		assert.True(t, ok)
		assert.True(t, errors.Is(err, ErrMalformedPointer), "error %v", err)
		assert.Contains(t, err.Error(), "m-1")
	})
}
