package idempotency_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

// TestMissingKeyIsNeverHashedAsNull is scenario N03 (unit + moto): a key expression that selects
// nothing must never be hashed as null, so keyless messages never share a record. Keys
// body.orderId and the composite [body.tenant, body.orderId]; modes fail (the default)
// and bypass (KeyOptional).
func TestMissingKeyIsNeverHashedAsNull(t *testing.T) {
	t.Parallel()
	bodies := map[string]string{
		"m1": `{"orderId":"O-1","amount":5}`,
		"m2": `{"amount":7}`,
		"m3": `{"amount":9}`,
		"m4": `{"orderId":""}`,
		"m5": `{"orderId":null,"amount":3}`,
		"m6": `{"tenant":"T1","orderId":"O-2"}`,
		"m7": `{"tenant":"T1"}`,
		"m8": `{}`,
	}
	composite := map[string]bool{"m6": true, "m7": true, "m8": true}
	keyless := []string{"m2", "m3", "m4", "m5", "m8"}
	for _, bypass := range []bool{false, true} {
		name := map[bool]string{false: "fail", true: "bypass"}[bypass]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			table := newEmulatorTable(t)
			var logs logBuffer
			var mu sync.Mutex
			effects := map[string]int{}
			inner := sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
				mu.Lock()
				defer mu.Unlock()
				effects[m.ID]++
				return nil
			})
			decisions := map[idempotency.EventKind][]string{} // the metric's input: decisions by kind
			observer := idempotency.ObserverFunc(func(_ context.Context, ev idempotency.Event) {
				mu.Lock()
				defer mu.Unlock()
				decisions[ev.Kind] = append(decisions[ev.Kind], ev.MessageID)
			})
			config := func(key idempotency.KeyFunc) idempotency.Config {
				return idempotency.Config{KeyFunc: key, KeyOptional: bypass, Logger: newLogger(&logs), Observer: observer}
			}
			single := sqsworker.Chain(inner, idempotency.Middleware(table.store(), config(idempotency.KeyFromJSONField("orderId"))))
			multi := sqsworker.Chain(inner, idempotency.Middleware(table.store(), config(idempotency.KeyFromJSONFields("tenant", "orderId"))))
			errs := map[string]error{}
			for _, id := range []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"} {
				handler := single
				if composite[id] {
					handler = multi
				}
				errs[id] = handler.Handle(t.Context(), &sqsworker.Message{ID: id, Body: bodies[id], ReceiveCount: 1})
			}
			for _, id := range []string{"m1", "m6", "m7"} {
				if errs[id] != nil || effects[id] != 1 {
					t.Errorf("%s: %v, handler calls %d; want success and 1", id, errs[id], effects[id])
				}
			}
			for _, id := range keyless {
				if bypass {
					if errs[id] != nil || effects[id] != 1 {
						t.Errorf("%s: %v, handler calls %d; want success and 1 (bypassed)", id, errs[id], effects[id])
					}
					continue
				}
				want := "expression body.orderId selected no value"
				if id == "m8" {
					want = "expression [body.tenant, body.orderId] selected no value"
				}
				outcome := sqsworker.Classify(errs[id])
				if outcome.Kind != sqsworker.OutcomeDeadLetter || outcome.Reason != idempotency.ReasonKeyMissing ||
					!strings.Contains(errs[id].Error(), want) || effects[id] != 0 {
					t.Errorf("%s: %s %q (%v), handler calls %d; want a permanent IdempotencyKeyMissing naming %q and 0 calls",
						id, outcome.Kind, outcome.Reason, errs[id], effects[id], want)
				}
			}
			// Exactly the records of m1, m6 and m7; the partial key has an explicit null.
			wantKeys := []string{stored("O-1"), stored(`["T1","O-2"]`), stored(`["T1",null]`)}
			got := table.keys(t)
			if strings.Join(got, " ") != strings.Join(sortedCopy(wantKeys), " ") {
				t.Errorf("records %q; want exactly %q", got, sortedCopy(wantKeys))
			}
			bypassed := strings.Count(logs.String(), `"msg":"idempotency bypassed: missing key"`)
			if want := map[bool]int{false: 0, true: 5}[bypass]; bypassed != want {
				t.Errorf("%d 'idempotency bypassed: missing key' lines; want %d", bypassed, want)
			}
			// The count a metric records (otelidempotency counts these events by kind).
			missing := map[bool]idempotency.EventKind{false: idempotency.EventKeyMissing, true: idempotency.EventBypassed}[bypass]
			want := map[idempotency.EventKind][]string{idempotency.EventClaimed: {"m1", "m6", "m7"}, missing: keyless}
			assert.Equal(t, want, decisions, "observed decisions")
		})
	}
}

func sortedCopy(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return out
}
