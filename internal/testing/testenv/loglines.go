package testenv

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
)

// LogLines records what a logger writes, one JSON object a line.
type LogLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// NewLogLines returns a recorder and a debug-level logger writing to it.
func NewLogLines() (*LogLines, *slog.Logger) {
	lines := &LogLines{}
	return lines, slog.New(slog.NewJSONHandler(lines, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (l *LogLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Records returns every line written so far whose msg is message ("" for all).
func (l *LogLines) Records(message string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var records []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.buf.String()), "\n") {
		var record map[string]any
		if json.Unmarshal([]byte(line), &record) == nil && (message == "" || record["msg"] == message) {
			records = append(records, record)
		}
	}
	return records
}
