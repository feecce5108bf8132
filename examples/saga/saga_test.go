package saga_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/examples/saga"
)

// A hostile order id (empty, or too long for the key's bound) is refused before any
// effect: the message goes to the dead-letter queue (the state machine catches the
// failure) and the ledger is untouched.
func TestHandlerRefusesAnOrderIDOutOfBounds(t *testing.T) {
	for _, order := range []string{"", strings.Repeat("o", saga.MaxOrderBytes+1)} {
		ledger := saga.NewLedger()
		body, err := json.Marshal(saga.Job{Type: "charge", Order: order})
		require.NoError(t, err)
		err = saga.Handler(ledger).Handle(context.Background(), &sqsworker.Message{ID: "m", Body: string(body)})
		outcome := sqsworker.Classify(err)
		assert.Equal(t, sqsworker.OutcomeDeadLetter, outcome.Kind, "order of %d bytes: %v", len(order), err)
		assert.Equal(t, "Saga.InvalidOrder", outcome.Reason)
		assert.Empty(t, ledger.Effects())
	}
}

// An order id of MaxOrderBytes is taken: its effect is applied (the handler then fails
// only because this test runs it outside the task-token middleware).
func TestHandlerTakesAnOrderIDAtTheBound(t *testing.T) {
	ledger := saga.NewLedger()
	order := strings.Repeat("o", saga.MaxOrderBytes)
	body, err := json.Marshal(saga.Job{Type: "charge", Order: order})
	require.NoError(t, err)
	err = saga.Handler(ledger).Handle(context.Background(), &sqsworker.Message{ID: "m", Body: string(body)})
	require.ErrorContains(t, err, "SetOutput outside a task-token job")
	assert.Equal(t, []string{"charge " + order}, ledger.Effects())
}
