package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReadStartsShapes: readStarts reads the lines every contender writes: a Go
// worker's (t and t_ns), consumer.mjs's (t_ns from a JavaScript double, so a multiple
// of 256 ns), the Spring application's (t_ns from Instant) and the lambdatest log's (t
// only, other events among them); a repeated key keeps its first start.
func TestReadStartsShapes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "starts.jsonl")
	lines := `{"event":"call","key":"go","t":1796411964332,"t_ns":1796411964332135123}
{"event":"call","key":"node","t":1796411964347,"t_ns":1796411964347383000}
{"event":"call","key":"java","t":1796411964400,"t_ns":1796411964400123456}
{"event":"start","key":"lambda","t":1796411964000}
{"event":"call","key":"lambda","t":1796411964500}
{"event":"call","key":"go","t":1796411965000,"t_ns":1796411965000000000}
not json
`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	starts, err := readStarts(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{
		"go":     time.Unix(0, 1796411964332135123),
		"node":   time.Unix(0, 1796411964347383000),
		"java":   time.Unix(0, 1796411964400123456),
		"lambda": time.UnixMilli(1796411964500),
	}
	if len(starts) != len(want) {
		t.Fatalf("starts = %v, want %v", starts, want)
	}
	for key, at := range want {
		if !starts[key].Equal(at) {
			t.Errorf("start of %s = %v, want %v", key, starts[key], at)
		}
	}
}
