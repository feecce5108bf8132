// Package receiver is the webhook endpoint the demo delivers to: an HTTP server on
// 127.0.0.1 that fails a seeded-random share of requests with 503, answers 410 Gone on
// paths under /gone/, and counts, per delivery id (the Idempotency-Key header), how many
// requests arrived and how many 2xx responses reached a live client.
//
//	r, err := receiver.Start(receiver.Config{FailureRate: 0.15, Seed: 1, MaxFailuresPerDelivery: 2})
//	if err != nil { return err }
//	defer r.Close()
//	url := r.URL() + "/hooks/orders"    // 200, or 503 for 15% of requests
//	gone := r.URL() + "/gone/orders"    // always 410
//	...
//	r.Pause()                           // requests now wait; Resume lets them go on
//	delivered := r.Counts()["d-123"].Successes
//
// A success is counted only when the 2xx response was written to a connection whose
// client was still there: a request whose client went away first (its context was
// cancelled, or its connection is found closed when the response is about to be
// written) counts as Abandoned. So a worker killed while the receiver holds its request
// cannot have that delivery counted.
package receiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// GonePrefix is the path prefix the receiver answers with 410 Gone.
const GonePrefix = "/gone/"

// maxBody bounds the request body the receiver reads.
const maxBody = 1 << 20

// Config configures a [Receiver]. The zero value answers every request with 200.
type Config struct {
	// FailureRate specifies the share of requests (0 to 1) answered with 503.
	FailureRate float64
	// Seed seeds the random choice of the requests that fail.
	Seed uint64
	// MaxFailuresPerDelivery, if positive, caps the 503s per delivery id: once a
	// delivery has failed that often, its requests succeed. With a cap below the queue's
	// maxReceiveCount, random failures alone never dead-letter a delivery, so a test can
	// expect exact dead-letter counts.
	MaxFailuresPerDelivery int
	// Address specifies the listen address; if empty, 127.0.0.1 on a random port.
	Address string
	// Logger, if set, gets one line per request answered ("receiver: answered", with
	// path, idempotency_key, status and whether the response reached the client), so a
	// person can watch deliveries arrive.
	Logger *slog.Logger
}

// Counts are the receiver's counters for one delivery id (or, from [Receiver.Totals], all).
type Counts struct {
	// Requests counts requests received.
	Requests int
	// Successes counts 2xx responses written to a live client connection.
	Successes int
	// Failures counts 503 responses.
	Failures int
	// Gone counts 410 responses.
	Gone int
	// Rejected counts 400 responses (no Idempotency-Key header).
	Rejected int
	// Abandoned counts requests whose client went away before the response was written.
	Abandoned int
}

func (c *Counts) add(other Counts) {
	c.Requests += other.Requests
	c.Successes += other.Successes
	c.Failures += other.Failures
	c.Gone += other.Gone
	c.Rejected += other.Rejected
	c.Abandoned += other.Abandoned
}

// entry is one delivery id's counters plus the 503s chosen for it (Failures counts them
// only once written, so the cap reads this).
type entry struct {
	Counts
	failuresChosen int
}

// Receiver is the running endpoint. Its methods are safe for concurrent use.
type Receiver struct {
	config   Config
	server   *http.Server
	listener net.Listener
	served   chan struct{}

	mu             sync.Mutex
	random         *rand.Rand
	counts         map[string]*entry
	paused         bool
	resumed        chan struct{} // closed by Resume; replaced by Pause
	held           int           // requests waiting while paused
	writing        int           // responses being written (past the pause gate)
	writesDone     *sync.Cond    // signalled when writing drops
	lastResponseAt time.Time
}

type connectionKey struct{}

// Start listens on Config.Address (by default 127.0.0.1 on a random port) and serves
// until Close.
func Start(config Config) (*Receiver, error) {
	if config.FailureRate < 0 || config.FailureRate > 1 {
		return nil, fmt.Errorf("receiver: FailureRate %v is outside 0..1", config.FailureRate)
	}
	if config.Address == "" {
		config.Address = "127.0.0.1:0"
	}
	if config.Logger == nil {
		config.Logger = slog.New(slog.DiscardHandler)
	}
	listener, err := net.Listen("tcp", config.Address)
	if err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	r := &Receiver{
		config:   config,
		listener: listener,
		served:   make(chan struct{}),
		random:   rand.New(rand.NewPCG(config.Seed, config.Seed^0x9e3779b97f4a7c15)),
		counts:   map[string]*entry{},
		resumed:  make(chan struct{}),
	}
	r.writesDone = sync.NewCond(&r.mu)
	close(r.resumed)
	r.server = &http.Server{
		Handler:           http.HandlerFunc(r.serve),
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, connection net.Conn) context.Context {
			return context.WithValue(ctx, connectionKey{}, connection)
		},
	}
	go func() {
		defer close(r.served)
		_ = r.server.Serve(listener) // returns http.ErrServerClosed after Close
	}()
	return r, nil
}

// URL returns the base URL, "http://127.0.0.1:PORT".
func (r *Receiver) URL() string {
	return "http://" + r.listener.Addr().String()
}

// Close stops the server and closes every connection; waiting requests end abandoned.
func (r *Receiver) Close() error {
	err := r.server.Close()
	<-r.served
	return err
}

// Pause makes requests wait before their response is written, until Resume. It returns
// once the responses already being written are written, so LastResponseAt does not
// move after Pause returns. A waiting request whose client goes away counts as Abandoned.
func (r *Receiver) Pause() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.paused {
		r.paused = true
		r.resumed = make(chan struct{})
	}
	for r.writing > 0 {
		r.writesDone.Wait()
	}
}

// Resume lets waiting requests go on.
func (r *Receiver) Resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paused {
		r.paused = false
		close(r.resumed)
	}
}

// Held returns how many requests are waiting because the receiver is paused.
func (r *Receiver) Held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

// LastResponseAt returns when the last response (of any status) was written; zero
// before the first.
func (r *Receiver) LastResponseAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastResponseAt
}

// Counts returns a copy of the counters per delivery id.
func (r *Receiver) Counts() map[string]Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := make(map[string]Counts, len(r.counts))
	for id, count := range r.counts {
		counts[id] = count.Counts
	}
	return counts
}

// Totals returns the counters summed over every delivery id, and how many delivery ids
// have at least one success.
func (r *Receiver) Totals() (totals Counts, delivered int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, count := range r.counts {
		totals.add(count.Counts)
		if count.Successes > 0 {
			delivered++
		}
	}
	return totals, delivered
}

func (r *Receiver) serve(w http.ResponseWriter, request *http.Request) {
	// Read the whole body first: net/http notices a client that went away (and cancels
	// the request's context) only once the body has been read.
	_, _ = io.Copy(io.Discard, io.LimitReader(request.Body, maxBody))
	id := request.Header.Get("Idempotency-Key")

	r.mu.Lock()
	count := r.counts[id]
	if count == nil {
		count = &entry{}
		r.counts[id] = count
	}
	count.Requests++
	for r.paused {
		resumed := r.resumed
		r.held++
		r.mu.Unlock()
		select {
		case <-resumed:
		case <-request.Context().Done():
		}
		r.mu.Lock()
		r.held--
		if request.Context().Err() != nil {
			count.Abandoned++
			r.mu.Unlock()
			return
		}
	}
	if connectionClosed(request) {
		count.Abandoned++
		r.mu.Unlock()
		return
	}
	status := r.decide(request.URL.Path, id, count)
	r.writing++
	r.mu.Unlock()

	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, err := io.WriteString(w, http.StatusText(status)+"\n")
	if err == nil {
		err = http.NewResponseController(w).Flush()
	}
	// A context cancelled by now means the client was gone before the response left.
	written := err == nil && request.Context().Err() == nil

	r.config.Logger.Info("receiver: answered", "path", request.URL.Path, "idempotency_key", id, "status", status, "reached_client", written)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writing--
	r.writesDone.Broadcast()
	r.lastResponseAt = time.Now()
	switch {
	case !written:
		count.Abandoned++
	case status == http.StatusOK:
		count.Successes++
	case status == http.StatusServiceUnavailable:
		count.Failures++
	case status == http.StatusGone:
		count.Gone++
	case status == http.StatusBadRequest:
		count.Rejected++
	}
}

// decide picks the status of a request; r.mu is held.
func (r *Receiver) decide(path, id string, count *entry) int {
	switch {
	case id == "":
		return http.StatusBadRequest
	case strings.HasPrefix(path, GonePrefix):
		return http.StatusGone
	case r.config.FailureRate > 0 && r.random.Float64() < r.config.FailureRate &&
		(r.config.MaxFailuresPerDelivery <= 0 || count.failuresChosen < r.config.MaxFailuresPerDelivery):
		count.failuresChosen++
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

// connectionClosed reports whether the request's client has closed its connection, even
// when net/http has not noticed it yet (its background read may not have run).
func connectionClosed(request *http.Request) bool {
	if request.Context().Err() != nil {
		return true
	}
	connection, ok := request.Context().Value(connectionKey{}).(net.Conn)
	if !ok {
		return false
	}
	closed, err := peerClosed(connection)
	return err == nil && closed
}

// errNoPeek is returned by peerClosed where the platform cannot peek at a socket.
var errNoPeek = errors.New("receiver: cannot peek at connections on this platform")
