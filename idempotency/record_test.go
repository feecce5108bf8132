package idempotency_test

import (
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/idempotency"
)

func TestRecordExpiry(t *testing.T) {
	t.Parallel()
	inProgress := idempotency.Record{
		Status: idempotency.StatusInProgress, ExpiresAt: start.Add(time.Hour), InProgressExpiresAt: start.Add(1500 * time.Millisecond),
	}
	completed := idempotency.Record{Status: idempotency.StatusCompleted, ExpiresAt: start.Add(time.Hour), InProgressExpiresAt: start}
	tests := []struct {
		name                                     string
		record                                   idempotency.Record
		now                                      time.Time
		wantExpired, wantLeaseExpired, wantClaim bool
		wantLeaseLeft                            time.Duration
	}{
		{"LeaseLive", inProgress, start, false, false, false, 1500 * time.Millisecond},
		{"LeaseEndsNow", inProgress, start.Add(1500 * time.Millisecond), false, false, false, 0},
		{"LeaseEnded1ms", inProgress, start.Add(1501 * time.Millisecond), false, true, true, 0},
		{"LeaseEndedSubMillisecondOnly", inProgress, start.Add(1500*time.Millisecond + 999*time.Microsecond), false, false, false, 0},
		{"CompletedIgnoresLease", completed, start.Add(time.Minute), false, false, false, 0},
		{"ExpirationSecond", completed, start.Add(time.Hour + 999*time.Millisecond), false, false, false, 0},
		{"Expired", completed, start.Add(time.Hour + time.Second), true, false, true, 0},
		{"NoExpirationNeverExpires", idempotency.Record{Status: idempotency.StatusCompleted}, start.Add(1000 * time.Hour), false, false, false, 0},
		{"InProgressWithoutLeaseEnd", idempotency.Record{Status: idempotency.StatusInProgress, ExpiresAt: start.Add(time.Hour)}, start.Add(time.Minute), false, false, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.record.Expired(tc.now); got != tc.wantExpired {
				t.Errorf("Expired = %t; want %t", got, tc.wantExpired)
			}
			if got := tc.record.LeaseExpired(tc.now); got != tc.wantLeaseExpired {
				t.Errorf("LeaseExpired = %t; want %t", got, tc.wantLeaseExpired)
			}
			if got := tc.record.Claimable(tc.now); got != tc.wantClaim {
				t.Errorf("Claimable = %t; want %t", got, tc.wantClaim)
			}
			if got := tc.record.LeaseRemaining(tc.now); got != tc.wantLeaseLeft {
				t.Errorf("LeaseRemaining = %s; want %s", got, tc.wantLeaseLeft)
			}
		})
	}
}
