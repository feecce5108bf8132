package claimcheck

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
)

// pointerMessage stores payload in client and returns a message pointing to it.
func pointerMessage(client *fakeS3, key, payload string) *sqsworker.Message {
	client.objects["b/"+key] = []byte(payload)
	return &sqsworker.Message{
		ID:   "m-" + key,
		Body: Pointer{Bucket: "b", Key: key}.Body(),
		MessageAttributes: map[string]sqsworker.MessageAttribute{
			AttributePayloadSize: {DataType: "Number", StringValue: "7"},
			"job-type":           {DataType: "String", StringValue: "resize"},
		},
	}
}

func TestMiddlewareHandsTheHandlerThePayloadAndLeavesTheHostThePointer(t *testing.T) {
	client := newFakeS3()
	message := pointerMessage(client, "k1", "payload")
	pointerBody := message.Body
	var seenBody string
	var seenAttributes map[string]sqsworker.MessageAttribute
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		seenBody, seenAttributes = m.Body, m.MessageAttributes
		return sqsworker.Permanent("Broken", nil)
	}), Middleware(client, MiddlewareConfig{}))

	err := handler.Handle(context.Background(), message)

	assert.Equal(t, sqsworker.OutcomeDeadLetter, sqsworker.Classify(err).Kind, "the handler's error is returned as it is")
	assert.Equal(t, "payload", seenBody)
	assert.NotContains(t, seenAttributes, AttributePayloadSize, "the handler does not see the pointer's attribute")
	assert.Equal(t, "resize", seenAttributes["job-type"].StringValue)
	assert.Equal(t, pointerBody, message.Body, "the host still holds the pointer (a dead-letter send copies it)")
	assert.Contains(t, message.MessageAttributes, AttributePayloadSize)
	_, stillThere := client.object("b", "k1")
	assert.True(t, stillThere, "the middleware never deletes the payload")
}

func TestMiddlewareLeavesThePointerAfterAPanic(t *testing.T) {
	client := newFakeS3()
	message := pointerMessage(client, "k1", "payload")
	pointerBody := message.Body
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		panic("boom")
	}), Middleware(client, MiddlewareConfig{}))

	err := settle.Call(context.Background(), handler, message) // the hosts' recover wrapper

	assert.True(t, sqsworker.IsPanicError(err))
	assert.Equal(t, pointerBody, message.Body)
}

func TestMiddlewarePassesOtherMessagesThrough(t *testing.T) {
	client := newFakeS3()
	message := &sqsworker.Message{Body: Pointer{Bucket: "b", Key: "k"}.Body()} // a pointer-looking body without the attribute
	var seen string
	handler := Middleware(client, MiddlewareConfig{})(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		seen = m.Body
		return nil
	}))
	require.NoError(t, handler.Handle(context.Background(), message))
	assert.Equal(t, message.Body, seen)
	assert.Zero(t, client.gets)
}

func TestMiddlewareFailures(t *testing.T) {
	neverCalled := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		t.Error("the handler must not run")
		return nil
	})
	t.Run("missing object is permanent", func(t *testing.T) {
		client := newFakeS3()
		message := pointerMessage(client, "gone", "payload")
		delete(client.objects, "b/gone")
		outcome := sqsworker.Classify(Middleware(client, MiddlewareConfig{})(neverCalled).Handle(context.Background(), message))
		assert.Equal(t, sqsworker.OutcomeDeadLetter, outcome.Kind)
		assert.Equal(t, ReasonPayloadNotFound, outcome.Reason)
		assert.Contains(t, outcome.Err.Error(), "s3://b/gone")
	})
	t.Run("malformed pointer is permanent", func(t *testing.T) {
		client := newFakeS3()
		message := pointerMessage(client, "k", "payload")
		message.Body = `{"not":"a pointer"}`
		outcome := sqsworker.Classify(Middleware(client, MiddlewareConfig{})(neverCalled).Handle(context.Background(), message))
		assert.Equal(t, sqsworker.OutcomeDeadLetter, outcome.Kind)
		assert.Equal(t, ReasonMalformedPointer, outcome.Reason)
	})
	t.Run("payload above the limit is permanent", func(t *testing.T) {
		client := newFakeS3()
		message := pointerMessage(client, "k", strings.Repeat("x", 11))
		outcome := sqsworker.Classify(Middleware(client, MiddlewareConfig{MaxPayloadSize: 10})(neverCalled).Handle(context.Background(), message))
		assert.Equal(t, sqsworker.OutcomeDeadLetter, outcome.Kind)
		assert.Equal(t, ReasonPayloadTooLarge, outcome.Reason)
	})
	t.Run("other S3 errors are retried", func(t *testing.T) {
		client := newFakeS3()
		message := pointerMessage(client, "k", "payload")
		client.getErr = errors.New("AccessDenied")
		outcome := sqsworker.Classify(Middleware(client, MiddlewareConfig{})(neverCalled).Handle(context.Background(), message))
		assert.Equal(t, sqsworker.OutcomeRetry, outcome.Kind)
		assert.Contains(t, outcome.Err.Error(), "AccessDenied")
	})
}
