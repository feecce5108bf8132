package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/producer"
)

// TestTickMessageKeepsItsJobID: a tick prepared again (sent again after a failed send)
// has the same job id, derived from the tick; another tick has another.
func TestTickMessageKeepsItsJobID(t *testing.T) {
	sc := &compiled{Schedule: Schedule{Name: "nightly", JobType: "report"}, queueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs"}
	tick := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	id := TickID(sc.Name, tick)
	first, err := sc.message(id, tick)
	require.NoError(t, err)
	again, err := sc.message(id, tick)
	require.NoError(t, err)
	assert.Equal(t, producer.DerivedJobID(tick, id), first.JobID())
	assert.Equal(t, first.JobID(), again.JobID())
	next := tick.Add(24 * time.Hour)
	other, err := sc.message(TickID(sc.Name, next), next)
	require.NoError(t, err)
	assert.NotEqual(t, first.JobID(), other.JobID())
	assert.Less(t, first.JobID(), other.JobID(), "ids sort by tick")
}
