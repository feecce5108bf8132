package main

import (
	"testing"
	"time"
)

// TestKilledAfterCountsARequestStampedJustAfterTheKill replays CI's false violation: pid
// 22925's effect was stamped by the counter 77 µs after the kill's own stamp (the request
// was read from the socket after the signal), then repeated by the redelivery. A dead
// process sends nothing, so the effect was sent before the kill and the kill explains
// the repeat; a request of another pid, one stamped well after the worker was reaped,
// and one sent longer than the window before the kill are not explained.
func TestKilledAfterCountsARequestStampedJustAfterTheKill(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		parsed, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return parsed
	}
	kill := signalEvent{pid: 22925, at: at("2026-12-08T00:19:41.610696137Z"), reaped: at("2026-12-08T00:19:41.611900000Z")}
	e := &evaluation{opts: options{handlerTimeout: 8 * time.Second}, kills: []signalEvent{kill}}
	for _, c := range []struct {
		name string
		r    request
		want bool
	}{
		{"stamped 77 µs after the kill's stamp (CI)", request{pid: 22925, at: at("2026-12-08T00:19:41.610773112Z")}, true},
		{"sent 2 s before the kill", request{pid: 22925, at: kill.at.Add(-2 * time.Second)}, true},
		{"sent longer than the window before the kill", request{pid: 22925, at: kill.at.Add(-14 * time.Second)}, false},
		{"stamped past in-flight after the reaping", request{pid: 22925, at: kill.reaped.Add(inFlight + time.Millisecond)}, false},
		{"another worker's request", request{pid: 23085, at: kill.at}, false},
	} {
		if got := e.killedAfter(c.r); got != c.want {
			t.Errorf("%s: killedAfter = %v, want %v", c.name, got, c.want)
		}
	}
}
