package batches

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A batch's state, the one place the CLI and the page read it from.
func TestStatusState(t *testing.T) {
	for _, c := range []struct {
		status Status
		want   string
	}{
		{Status{Counts: Counts{Added: 3, Pending: 3}}, "open"},
		{Status{Sealed: true, Counts: Counts{Added: 3, Pending: 1, Succeeded: 2}}, "sealed"},
		{Status{Sealed: true, Counts: Counts{Added: 3, Succeeded: 3}}, "succeeded"},
		{Status{Sealed: true}, "succeeded"}, // an empty batch
		{Status{Sealed: true, Counts: Counts{Added: 3, Succeeded: 2, DeadLettered: 1}}, "complete"},
		{Status{Sealed: true, Counts: Counts{Added: 1, Succeeded: 1}, Success: &Callback{}}, "succeeded (callback not sent)"},
		{Status{Sealed: true, Counts: Counts{Added: 1, Succeeded: 1}, Success: &Callback{FiredAt: time.Unix(1, 0)}}, "succeeded"},
		{Status{Sealed: true, Counts: Counts{Added: 1, DeadLettered: 1}, Complete: &Callback{}, Success: &Callback{FiredAt: time.Unix(1, 0)}}, "complete (callback not sent)"},
	} {
		assert.Equal(t, c.want, c.status.State(), "%+v", c.status)
	}
}
