package saga

import (
	"context"
	"sync"
)

// Ledger is the in-memory [Effects] of one process.
type Ledger struct {
	mu      sync.Mutex
	effects []string
	seen    map[string]bool
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{seen: map[string]bool{}} }

// Apply records effect under key unless the key was seen, and reports whether it did. It
// never fails.
func (l *Ledger) Apply(_ context.Context, key, effect string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[key] {
		return false, nil
	}
	l.seen[key] = true
	l.effects = append(l.effects, effect)
	return true, nil
}

// Effects returns the effects in the order they happened.
func (l *Ledger) Effects() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.effects...)
}
