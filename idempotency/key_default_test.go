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

	_, err = idempotency.KeyFromProducer(&sqsworker.Message{})
	assert.ErrorIs(t, err, idempotency.ErrKeyMissing)
}
