package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

func TestKeyFromProducerPrefersTheAttribute(t *testing.T) {
	key, err := idempotency.KeyFromProducer(&sqsworker.Message{ID: "m-1", MessageAttributes: map[string]sqsworker.MessageAttribute{
		sqsworker.AttributeIdempotencyKey: {DataType: "String", StringValue: "order-7"},
	}})
	require.NoError(t, err)
	assert.Equal(t, "order-7", key)

	key, err = idempotency.KeyFromProducer(&sqsworker.Message{ID: "m-2"})
	require.NoError(t, err)
	assert.Equal(t, "m-2", key)

	// The job id comes before the message id: it survives hops and redrives.
	key, err = idempotency.KeyFromProducer(&sqsworker.Message{ID: "m-3", MessageAttributes: map[string]sqsworker.MessageAttribute{
		sqsworker.AttributeJobID: {DataType: "String", StringValue: "01KBQ2ZP5E8Y9V0D2X4M6N8R1T"},
	}})
	require.NoError(t, err)
	assert.Equal(t, "01KBQ2ZP5E8Y9V0D2X4M6N8R1T", key)

	_, err = idempotency.KeyFromProducer(&sqsworker.Message{})
	assert.ErrorIs(t, err, idempotency.ErrKeyMissing)
}
