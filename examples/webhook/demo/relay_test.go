package main

import (
	"testing"
	"time"
)

// TestRelayStoppedRightAfterStartExitsZero: the demo stops a relay as soon as the outbox
// is empty, which can be right after the relay process started (CI: relay 2 of the
// PostgreSQL run got SIGTERM before its handler was installed and died with exit code
// -1). stop waits for the relay's ready line, so the relay drains and exits 0 however
// early it is stopped. The relay needs no database for this: its pool connects lazily,
// and a claim that fails is retried until the drain.
func TestRelayStoppedRightAfterStartExitsZero(t *testing.T) {
	t.Parallel()
	for range 3 {
		r, err := startRelayProcess(1, []string{envRelay + "=" + storePostgres, envRelayPostgres + "=postgres://demo@127.0.0.1:1/none?connect_timeout=1"}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		code, err := r.stop(20 * time.Second)
		if err != nil || code != 0 {
			t.Fatalf("relay stopped right after its start: exit code %d, %v; want 0", code, err)
		}
	}
}
