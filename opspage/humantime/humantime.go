// Package humantime formats durations and instants the one way the operations page
// (package opspage) and the sqsworker CLI show them: compact durations with days ("14d0h", "5m2s"), times
// relative to now ("3m12s ago", "in 3d23h") and RFC 3339 timestamps in UTC. A zero time
// is "-".
package humantime

import (
	"fmt"
	"time"
)

// Short formats a duration compactly, with days from 24 h on ("3d23h", rounded to the
// hour), Go's form below ("5m2s", "0s").
func Short(d time.Duration) string {
	if d >= 24*time.Hour {
		hours := d.Round(time.Hour) / time.Hour
		return fmt.Sprintf("%dd%dh", hours/24, hours%24)
	}
	return d.String()
}

// Ago formats how long before now t was ("3m12s ago"; "in 5s" when t is after now), to
// the second, or "-" for a zero time.
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		return "in " + Short(-d)
	}
	return Short(d) + " ago"
}

// Until formats how long after now t is ("in 3d23h"; "5s ago" when t is before now), to
// the second, or "-" for a zero time.
func Until(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now).Round(time.Second)
	if d < 0 {
		return Short(-d) + " ago"
	}
	return "in " + Short(d)
}

// Timestamp formats t in RFC 3339, UTC, or "-" for a zero time.
func Timestamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
