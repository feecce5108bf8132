package idempotency_test

import (
	"testing"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/idempotency/idempotencytest"
)

func TestMemoryStoreConformance(t *testing.T) {
	t.Parallel()
	t.Run("FastPath", func(t *testing.T) {
		t.Parallel()
		idempotencytest.RunStoreTests(t, func(*testing.T) idempotency.Store { return idempotency.NewMemoryStore() })
	})
	t.Run("ReadPath", func(t *testing.T) {
		t.Parallel()
		idempotencytest.RunStoreTests(t, func(*testing.T) idempotency.Store { return &idempotency.MemoryStore{DisableFastPath: true} })
	})
}
