package main

import (
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// counter is the receiver of the workers' side effects and delivery reports. It plays a
// downstream service that honours an Idempotency-Key header: the first request for a key
// is applied (201), later ones are acknowledged without being applied again (200). It
// keeps every request, so the driver can tell an effect repeated after a SIGKILL (the
// worker died between the effect and its COMPLETED write) from any other repeat.
type counter struct {
	mu      sync.Mutex
	keys    map[string]*keyRecord
	applied atomic.Int64 // keys applied at least once
	server  *http.Server
	url     string
}

type keyRecord struct {
	deliveries []delivery
	effects    []request
	// replays counts effect requests that repeated an attempt already recorded (same
	// X-Soak-Attempt): net/http's transport resends a request carrying an
	// Idempotency-Key header when a reused connection fails before the answer, though
	// the server may have had it. One handler attempt is one effect, so they are not
	// effects.
	replays int
}

type request struct {
	pid     int
	at      time.Time
	attempt string // X-Soak-Attempt, effects only
}

type delivery struct {
	request
	receiveCount int
	messageID    string
}

func startCounter() (*counter, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &counter{keys: map[string]*keyRecord{}, url: "http://" + listener.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /delivery", c.handleDelivery)
	mux.HandleFunc("POST /effect", c.handleEffect)
	c.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = c.server.Serve(listener) }()
	return c, nil
}

func (c *counter) record(key string) *keyRecord {
	record, ok := c.keys[key]
	if !ok {
		record = &keyRecord{}
		c.keys[key] = record
	}
	return record
}

func (c *counter) handleDelivery(w http.ResponseWriter, r *http.Request) {
	pid, _ := strconv.Atoi(r.Header.Get("X-Soak-PID"))
	count, _ := strconv.Atoi(r.Header.Get("X-Soak-Receive-Count"))
	c.mu.Lock()
	record := c.record(r.Header.Get("Idempotency-Key"))
	record.deliveries = append(record.deliveries, delivery{
		request:      request{pid: pid, at: time.Now()},
		receiveCount: count,
		messageID:    r.Header.Get("X-Soak-Message-Id"),
	})
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (c *counter) handleEffect(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, "Idempotency-Key header required", http.StatusBadRequest)
		return
	}
	pid, _ := strconv.Atoi(r.Header.Get("X-Soak-PID"))
	attempt := r.Header.Get("X-Soak-Attempt")
	c.mu.Lock()
	record := c.record(key)
	replay := attempt != "" && slices.ContainsFunc(record.effects, func(e request) bool { return e.attempt == attempt })
	if replay {
		record.replays++
	} else {
		record.effects = append(record.effects, request{pid: pid, at: time.Now(), attempt: attempt})
	}
	first := len(record.effects) == 1 && !replay
	c.mu.Unlock()
	if first {
		c.applied.Add(1)
		w.WriteHeader(http.StatusCreated)
		return
	}
	w.WriteHeader(http.StatusOK) // already applied: acknowledged, not applied again
}

// snapshot returns a copy of the per-key records.
func (c *counter) snapshot() map[string]keyRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]keyRecord, len(c.keys))
	for key, record := range c.keys {
		out[key] = keyRecord{
			deliveries: append([]delivery(nil), record.deliveries...),
			effects:    append([]request(nil), record.effects...),
			replays:    record.replays,
		}
	}
	return out
}

func (c *counter) close() { _ = c.server.Close() }
