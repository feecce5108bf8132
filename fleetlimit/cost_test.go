package fleetlimit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/fleetlimit"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// TestDynamoDBCallsPerJob counts the DynamoDB calls of 20 jobs of 20 tenants through a
// wrapped client (moto): a concurrency limit costs 2 calls a job (take, release), a
// rate limit 1, both in one limiter 3, for a job whose permit is free and whose start
// needs no wait; renewals add one call per Lease/3 of a handler's run.
func TestDynamoDBCallsPerJob(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, client)
	for name, c := range map[string]struct {
		config fleetlimit.Config
		want   int64
	}{
		"concurrency": {fleetlimit.Config{Concurrency: 2}, 2},
		"rate":        {fleetlimit.Config{Rate: 1000}, 1},
		"both":        {fleetlimit.Config{Concurrency: 2, Rate: 1000}, 3},
	} {
		t.Run(name, func(t *testing.T) {
			api := &countingAPI{API: client}
			config := c.config
			config.Table, config.Name = tableName, name
			config.Key = func(m *sqsworker.Message) string { return m.GroupID }
			handler := newLimiter(t, api, config).Middleware()(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }))
			const jobs = 20
			deferred := 0
			for i := range jobs {
				for {
					err := handler.Handle(context.Background(), &sqsworker.Message{ID: fmt.Sprint(i), GroupID: fmt.Sprintf("tenant-%d", i)})
					if sqsworker.Classify(err).Kind != sqsworker.OutcomeDefer {
						require.NoError(t, err)
						break
					}
					// On a loaded machine a start can miss its instant by more than the
					// tolerance (the timer fired late); the attempt cost what a job does.
					deferred++
				}
			}
			if deferred == 0 {
				// A write of the sequence is refused only when the SDK retried it after its
				// first attempt had taken effect; the limiter then makes one more call.
				assert.GreaterOrEqual(t, api.calls.Load(), c.want*jobs, "%d calls a job", c.want)
				assert.LessOrEqual(t, api.calls.Load(), c.want*jobs+api.refused.Load(), "%d calls a job, and one more after each retried write that met its own result", c.want)
			} else {
				assert.LessOrEqual(t, api.calls.Load(), c.want*int64(jobs+deferred), "at most %d calls an attempt", c.want)
			}
			t.Logf("%s: %.2f DynamoDB calls a job (%d attempts deferred for a missed start, %d writes refused)", name, float64(api.calls.Load())/jobs, deferred, api.refused.Load())
		})
	}
}
