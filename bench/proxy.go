package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// countingProxy is a reverse proxy in front of one emulator endpoint that counts API
// calls by operation (the X-Amz-Target header of the JSON protocol, or the Action
// parameter of the query protocol) and, for SQS, the messages deleted. Every contender
// talks to the emulator through the same proxy, so every contender pays the same hop.
//
// With a latency, every call waits latency ±25% (uniform) before it is forwarded: the
// round trip of SQS in the same region (~10 ms), which the emulator on 127.0.0.1 lacks.
//
// The clock is the confirmed deletes: armed with (warmup, target), the proxy notes the
// time and the counts when the warmup-th message was deleted (the measurement starts)
// and when the target-th was (it ends).
type countingProxy struct {
	URL     string
	server  *http.Server
	latency time.Duration

	mu           sync.Mutex
	armed        bool
	counts       map[string]int64
	warmupTarget int64
	warmAt       time.Time
	warm         chan struct{}
	warmCounts   map[string]int64 // counts when the warm-up target was reached
	deleteTarget int64
	doneAt       time.Time
	done         chan struct{}
	deleted      atomic.Int64
	frozen       map[string]int64 // counts when the delete target was reached
}

// startProxy proxies target, delaying every call by latency ±25% (none when 0).
func startProxy(target string, latency time.Duration) (*countingProxy, error) {
	targetURL, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &countingProxy{URL: "http://" + listener.Addr().String(), counts: map[string]int64{}, latency: latency}
	reverse := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(targetURL)
			r.Out.Host = r.In.Host
		},
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        512,
			MaxIdleConnsPerHost: 512,
			IdleConnTimeout:     90 * time.Second,
		},
		ModifyResponse: p.modifyResponse,
		// Contenders cancel idle long polls when they stop; that is not worth a log line.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.server = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.count(r)
		if p.latency > 0 {
			timer := time.NewTimer(jittered(p.latency))
			select {
			case <-timer.C:
			case <-r.Context().Done():
				timer.Stop()
				return
			}
		}
		reverse.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.server.Serve(listener) }()
	return p, nil
}

// jittered is d ±25%, uniform.
func jittered(d time.Duration) time.Duration {
	return d*3/4 + rand.N(d/2+1)
}

// operation names the API call of a request.
func operation(r *http.Request) string {
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		if _, op, ok := strings.Cut(target, "."); ok {
			return op
		}
		return target
	}
	if action := r.URL.Query().Get("Action"); action != "" {
		return action
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err == nil {
			if values, err := url.ParseQuery(string(body)); err == nil && values.Get("Action") != "" {
				return values.Get("Action")
			}
		}
	}
	return "other"
}

func (p *countingProxy) count(r *http.Request) {
	op := operation(r)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.armed {
		return
	}
	p.counts[op]++
}

// modifyResponse counts deleted messages from DeleteMessageBatch and DeleteMessage
// responses (JSON protocol).
func (p *countingProxy) modifyResponse(response *http.Response) error {
	op := operation(response.Request)
	if response.StatusCode != http.StatusOK || (op != "DeleteMessageBatch" && op != "DeleteMessage") {
		return nil
	}
	n := int64(1)
	if op == "DeleteMessageBatch" {
		body, err := io.ReadAll(response.Body)
		response.Body.Close()
		response.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			return nil
		}
		var output struct{ Successful []json.RawMessage }
		if json.Unmarshal(body, &output) != nil {
			return nil
		}
		n = int64(len(output.Successful))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.armed {
		return nil
	}
	total := p.deleted.Add(n)
	if p.warmupTarget >= 0 && total >= p.warmupTarget && p.warmAt.IsZero() {
		p.warmAt = time.Now()
		p.warmCounts = clone(p.counts)
		close(p.warm)
	}
	if p.deleteTarget > 0 && total >= p.deleteTarget && p.doneAt.IsZero() {
		p.doneAt = time.Now()
		p.frozen = clone(p.counts)
		close(p.done)
	}
	return nil
}

// arm resets the counters and starts counting; warm is closed once warmup messages
// were deleted (at once for 0), done once deleteTarget were (never when deleteTarget
// is 0).
func (p *countingProxy) arm(warmup, deleteTarget int64) (warm, done <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = true
	p.counts = map[string]int64{}
	p.warmAt, p.doneAt, p.frozen, p.warmCounts = time.Time{}, time.Time{}, nil, nil
	p.warmupTarget, p.deleteTarget = warmup, deleteTarget
	p.deleted.Store(0)
	p.warm, p.done = make(chan struct{}), make(chan struct{})
	if warmup == 0 {
		p.warmAt, p.warmCounts = time.Now(), map[string]int64{}
		close(p.warm)
	}
	return p.warm, p.done
}

// snapshot returns the calls counted between the warm-up target and the delete target
// (or now, if that was not reached), and the times the two were reached.
func (p *countingProxy) snapshot() (counts map[string]int64, warmAt, doneAt time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := p.counts
	if p.frozen != nil {
		end = p.frozen
	}
	counts = clone(end)
	for op, n := range p.warmCounts {
		counts[op] -= n
		if counts[op] == 0 {
			delete(counts, op)
		}
	}
	return counts, p.warmAt, p.doneAt
}

func (p *countingProxy) disarm() {
	p.mu.Lock()
	p.armed = false
	p.mu.Unlock()
}

func (p *countingProxy) close() { _ = p.server.Close() }

func clone(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sum(m map[string]int64) int64 {
	var total int64
	for _, v := range m {
		total += v
	}
	return total
}

// ddbWrites counts the DynamoDB write operations among counts.
func ddbWrites(counts map[string]int64) int64 {
	return counts["PutItem"] + counts["UpdateItem"] + counts["DeleteItem"] + counts["BatchWriteItem"] + counts["TransactWriteItems"]
}
