package claimcheck

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

func stringAttribute(value string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
}

func TestNewStoreReportsEveryBadSetting(t *testing.T) {
	_, err := NewStore(nil, Config{Threshold: sqsinfo.MaxMessageBytes + 1, KeyPrefix: strings.Repeat("p", 961)})
	require.Error(t, err)
	for _, want := range []string{"nil S3 client", "Config.Bucket is empty", "Config.Threshold 1048577", "Config.KeyPrefix is 961 bytes"} {
		assert.Contains(t, err.Error(), want)
	}
	for prefix, want := range map[string]string{
		"jobs/../":  `".." path segment`,
		"/jobs/":    "empty path segment",
		"jobs%2F":   `character '%'`,
		"jobs dir/": `character ' '`,
	} {
		_, err := NewStore(newFakeS3(), Config{Bucket: "b", KeyPrefix: prefix})
		assert.ErrorContains(t, err, want, "a prefix the resolver would refuse: %q", prefix)
	}
}

func TestStoreLocationIsWhatTheResolverAllows(t *testing.T) {
	client := newFakeS3()
	store, err := NewStore(client, Config{Bucket: "payloads", KeyPrefix: "jobs/"})
	require.NoError(t, err)
	assert.Equal(t, Location{Bucket: "payloads", KeyPrefix: "jobs/"}, store.Location())
	attributes := map[string]types.MessageAttributeValue{sqsworker.AttributeIdempotencyKey: stringAttribute("order-1")}
	for _, attrs := range []map[string]types.MessageAttributeValue{nil, attributes} {
		body, newAttributes, err := store.Offload(context.Background(), "q", "payload", attrs)
		require.NoError(t, err)
		message := &sqsworker.Message{ID: "m", Body: body, MessageAttributes: map[string]sqsworker.MessageAttribute{}}
		for name, value := range newAttributes {
			message.MessageAttributes[name] = sqsworker.MessageAttribute{DataType: aws.ToString(value.DataType), StringValue: aws.ToString(value.StringValue)}
		}
		var seen string
		handler := middleware(t, client, ResolverConfig{Allow: []Location{store.Location()}})(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
			seen = m.Body
			return nil
		}))
		require.NoError(t, handler.Handle(context.Background(), message))
		assert.Equal(t, "payload", seen)
	}
}

// A store marks the pointer shared when it publishes to an SNS topic, or when told to.
func TestOffloadMarksSharedPointers(t *testing.T) {
	cases := []struct {
		name        string
		shared      bool
		destination string
		want        bool
	}{
		{"queue", false, "https://sqs.us-east-1.amazonaws.com/123456789012/jobs", false},
		{"SNS topic", false, "arn:aws:sns:us-east-1:123456789012:jobs", true},
		{"SNS FIFO topic in another partition", false, "arn:aws-cn:sns:cn-north-1:123456789012:jobs.fifo", true},
		{"queue ARN", false, "arn:aws:sqs:us-east-1:123456789012:jobs", false},
		{"Config.Shared", true, "https://sqs.us-east-1.amazonaws.com/123456789012/jobs", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store, err := NewStore(newFakeS3(), Config{Bucket: "b", Shared: c.shared})
			require.NoError(t, err)
			_, attributes, err := store.Offload(context.Background(), c.destination, "payload", nil)
			require.NoError(t, err)
			value, ok := attributes[AttributePayloadShared]
			assert.Equal(t, c.want, ok)
			if c.want {
				assert.Equal(t, "String", aws.ToString(value.DataType))
				assert.Equal(t, "1", aws.ToString(value.StringValue))
			}
		})
	}
	t.Run("nine attributes leave no room for a shared pointer", func(t *testing.T) {
		store, err := NewStore(newFakeS3(), Config{Bucket: "b", Shared: true})
		require.NoError(t, err)
		attributes := map[string]types.MessageAttributeValue{}
		for i := range 9 {
			attributes["a"+strconv.Itoa(i)] = stringAttribute("v")
		}
		_, _, err = store.Offload(context.Background(), "q", "body", attributes)
		assert.ErrorIs(t, err, ErrTooManyAttributes)
		assert.ErrorContains(t, err, "the message has 9 and the pointer adds 2")
	})
}

func TestMessageSizeCountsAsSQSDoes(t *testing.T) {
	attributes := map[string]types.MessageAttributeValue{
		"job-type": stringAttribute("resize"),                                   // 8 + 6 + 6
		"blob":     {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2}}, // 4 + 6 + 2
	}
	assert.Equal(t, 5+20+12, messageSize("hello", attributes))
}

func TestOffloadStoresTheBodyAndSendsThePointer(t *testing.T) {
	client := newFakeS3()
	store, err := NewStore(client, Config{Bucket: "payloads", KeyPrefix: "jobs/"})
	require.NoError(t, err)
	body := strings.Repeat("x", sqsinfo.MaxMessageBytes+1)
	attributes := map[string]types.MessageAttributeValue{"job-type": stringAttribute("resize")}

	newBody, newAttributes, err := store.Offload(context.Background(), "https://sqs.example/q", body, attributes)
	require.NoError(t, err)

	pointer, err := ParsePointer(newBody)
	require.NoError(t, err)
	assert.Equal(t, "payloads", pointer.Bucket)
	assert.True(t, strings.HasPrefix(pointer.Key, "jobs/"), pointer.Key)
	assert.Len(t, pointer.Key, len("jobs/")+26, "a random key part (crypto/rand.Text) without an idempotency key")
	stored, ok := client.object(pointer.Bucket, pointer.Key)
	require.True(t, ok)
	assert.Equal(t, body, string(stored))
	assert.Equal(t, "Number", aws.ToString(newAttributes[AttributePayloadSize].DataType))
	assert.Equal(t, strconv.Itoa(len(body)), aws.ToString(newAttributes[AttributePayloadSize].StringValue))
	assert.Equal(t, "resize", aws.ToString(newAttributes["job-type"].StringValue))
	assert.Len(t, attributes, 1, "the caller's map is not modified")
}

func TestOffloadKeysAreUnique(t *testing.T) {
	store, err := NewStore(newFakeS3(), Config{Bucket: "b"})
	require.NoError(t, err)
	seen := map[string]bool{}
	for range 100 {
		body, _, err := store.Offload(context.Background(), "q", "payload", nil)
		require.NoError(t, err)
		assert.False(t, seen[body], "duplicate pointer %s", body)
		seen[body] = true
	}
}

func TestOffloadKeyOfAJobWithAnIdempotencyKeyIsDerived(t *testing.T) {
	client := newFakeS3()
	store, err := NewStore(client, Config{Bucket: "b"})
	require.NoError(t, err)
	offload := func(key, body string) string {
		pointerBody, _, err := store.Offload(context.Background(), "q", body, map[string]types.MessageAttributeValue{
			sqsworker.AttributeIdempotencyKey: stringAttribute(key),
		})
		require.NoError(t, err)
		return pointerBody
	}
	first := offload("order-7", "payload")
	assert.Equal(t, first, offload("order-7", "payload"), "a retried send of the job carries the same pointer")
	assert.NotEqual(t, first, offload("order-7", "other payload"))
	assert.NotEqual(t, first, offload("order-8", "payload"))
	pointer, err := ParsePointer(first)
	require.NoError(t, err)
	assert.Len(t, pointer.Key, 64)
	assert.Len(t, client.objects, 3, "the retry overwrote its own object")
}

func TestOffloadThreshold(t *testing.T) {
	client := newFakeS3()
	store, err := NewStore(client, Config{Bucket: "b", Threshold: 100})
	require.NoError(t, err)
	attributes := map[string]types.MessageAttributeValue{"job-type": stringAttribute("resize")} // 20 bytes

	body, newAttributes, err := store.Offload(context.Background(), "q", strings.Repeat("x", 80), attributes)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("x", 80), body, "exactly at the threshold: sent as it is")
	assert.Equal(t, attributes, newAttributes)
	assert.Zero(t, client.puts)

	body, _, err = store.Offload(context.Background(), "q", strings.Repeat("x", 81), attributes)
	require.NoError(t, err)
	_, err = ParsePointer(body)
	assert.NoError(t, err, "one byte above: offloaded")
	assert.Equal(t, 1, client.puts)
}

func TestOffloadRefusals(t *testing.T) {
	client := newFakeS3()
	store, err := NewStore(client, Config{Bucket: "b"})
	require.NoError(t, err)
	t.Run("reserved attribute", func(t *testing.T) {
		for _, name := range []string{AttributePayloadSize, LegacyAttributePayloadSize, AttributePayloadShared} {
			_, _, err := store.Offload(context.Background(), "q", "body", map[string]types.MessageAttributeValue{name: stringAttribute("1")})
			assert.ErrorIs(t, err, ErrReservedAttribute)
		}
	})
	t.Run("ten attributes", func(t *testing.T) {
		attributes := map[string]types.MessageAttributeValue{}
		for i := range 10 {
			attributes["a"+strconv.Itoa(i)] = stringAttribute("v")
		}
		_, _, err := store.Offload(context.Background(), "q", "body", attributes)
		assert.ErrorIs(t, err, ErrTooManyAttributes)
	})
	t.Run("attributes alone too large", func(t *testing.T) {
		attributes := map[string]types.MessageAttributeValue{"big": stringAttribute(strings.Repeat("v", sqsinfo.MaxMessageBytes))}
		_, _, err := store.Offload(context.Background(), "q", "body", attributes)
		assert.ErrorIs(t, err, ErrPointerTooLarge)
	})
	assert.Zero(t, client.puts, "nothing stored for a refused message")
	t.Run("PutObject fails", func(t *testing.T) {
		client.putErr = errors.New("SlowDown")
		defer func() { client.putErr = nil }()
		_, _, err := store.Offload(context.Background(), "q", "body", nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "SlowDown")
		assert.Contains(t, err.Error(), "storing the 4-byte body in s3://b/")
	})
}

// The store is the producer's PayloadStore.
var _ producer.PayloadStore = (*Store)(nil)
