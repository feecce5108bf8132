// Package faultproxy is an HTTP reverse proxy for tests, placed between an AWS SDK
// client and a local emulator (LocalStack, moto). It forwards every call, logs it, and,
// for the calls a [Rule] matches, answers an error instead, or forwards the call and
// then resets the connection so the response is lost. Calls are identified by the AWS
// JSON protocol's X-Amz-Target header ("AmazonSQS.ReceiveMessage",
// "DynamoDB_20120810.PutItem").
package faultproxy

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Rule makes the proxy fault some of the calls of one operation.
type Rule struct {
	// Operations lists the operation names the rule matches ("ReceiveMessage",
	// "PutItem"); empty matches every call.
	Operations []string
	// RequestContains, if not empty, limits the rule to calls whose request body
	// contains this text (for example `#message = :message`: one UpdateItem among
	// others).
	RequestContains string
	// FirstAttempts limits the rule to the SDK's first attempt of each call (the
	// amz-sdk-request header's attempt=1): with Reset, every matching call loses its
	// first answer and its retry is forwarded, as when an applied write's answer is lost.
	FirstAttempts bool
	// Fraction is the share of matching calls faulted, 0 to 1, spread evenly and
	// deterministically: the n-th matching call is faulted when ⌊n·Fraction⌋ grows.
	Fraction float64
	// Times, if positive, is the most calls the rule faults; later ones are forwarded.
	Times int
	// Status, Code and Message make the error answer: HTTP status and the JSON
	// protocol's __type and message (for example 400, "ThrottlingException").
	Status  int
	Code    string
	Message string
	// Reset, instead of an error answer, forwards the call and then closes the
	// connection without answering (a lost response). Hold, if not nil, delays the
	// reset until it is closed.
	Reset bool
	Hold  <-chan struct{}
	// ResponseContains, with Reset, resets only calls whose forwarded answer contains
	// this text (for example `"Messages"`: a receive that got messages); the others are
	// answered as usual and do not count toward Fraction or Times.
	ResponseContains string
	// Delay, instead of an error answer or a reset, holds the call this long before
	// forwarding it (a slow service). A client that gives up meanwhile (its context
	// ended, its connection closed) never reaches the emulator; the log says
	// "abandoned".
	Delay time.Duration

	matched, faulted int
}

// Call is one call the proxy saw.
type Call struct {
	At        time.Time
	Operation string
	// Attempt is the SDK's attempt number (amz-sdk-request header), 0 if absent.
	Attempt int
	// Fault is "" for a forwarded call, else "error <Code>", "reset", "delayed <Delay>"
	// (forwarded late) or "abandoned" (the client gave up during the delay).
	Fault string
	// Status is the status answered (0 for a reset).
	Status int
}

// Proxy is a running fault proxy. Point the client's BaseEndpoint at URL.
type Proxy struct {
	URL    string
	target string
	client *http.Client

	mu    sync.Mutex
	rules []*Rule
	calls []Call
}

// New starts a proxy to target (an http:// endpoint URL) and stops it when the test ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	if target == "" {
		t.Fatal("faultproxy: no target endpoint (is the emulator's AWS_ENDPOINT_URL_* set?)")
	}
	p := &Proxy{target: strings.TrimSuffix(target, "/"), client: &http.Client{Timeout: time.Minute}}
	server := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(server.Close)
	p.URL = server.URL
	return p
}

// SetRules replaces the rules (none: forward everything); each call is matched against
// the first rule that names its operation (and whose RequestContains it contains).
func (p *Proxy) SetRules(rules ...Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
	for i := range rules {
		p.rules = append(p.rules, &rules[i])
	}
}

// Calls returns a copy of the log of every call so far.
func (p *Proxy) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

// decide picks the rule that faults this call, if any, and logs the call.
func (p *Proxy) decide(operation string, attempt int, body []byte) *Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rule := range p.rules {
		if len(rule.Operations) > 0 && !contains(rule.Operations, operation) {
			continue
		}
		if rule.RequestContains != "" && !bytes.Contains(body, []byte(rule.RequestContains)) {
			continue
		}
		if rule.FirstAttempts && attempt != 1 {
			continue
		}
		rule.matched++
		if rule.Times > 0 && rule.faulted >= rule.Times {
			return nil
		}
		if int(float64(rule.matched)*rule.Fraction) > int(float64(rule.matched-1)*rule.Fraction) {
			rule.faulted++
			return rule
		}
		return nil
	}
	return nil
}

func (p *Proxy) log(call Call) {
	p.mu.Lock()
	p.calls = append(p.calls, call)
	p.mu.Unlock()
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	call := Call{At: time.Now(), Operation: operation(r), Attempt: attempt(r)}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	rule := p.decide(call.Operation, call.Attempt, body)
	if rule != nil && rule.Delay > 0 {
		timer := time.NewTimer(rule.Delay)
		select {
		case <-timer.C:
			call.Fault = fmt.Sprintf("delayed %s", rule.Delay)
			rule = nil
		case <-r.Context().Done():
			timer.Stop()
			call.Fault = "abandoned"
			p.log(call)
			return
		}
	}
	if rule != nil && !rule.Reset {
		call.Fault, call.Status = "error "+rule.Code, rule.Status
		p.log(call)
		answer := fmt.Sprintf(`{"__type":%q,"message":%q}`, rule.Code, rule.Message)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-Errortype", rule.Code)
		// DynamoDB clients check the body against this header, as DynamoDB sends it.
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(answer))), 10))
		w.WriteHeader(rule.Status)
		_, _ = io.WriteString(w, answer)
		return
	}
	response, err := p.forward(r, body)
	if err != nil {
		call.Fault, call.Status = "forward error: "+err.Error(), http.StatusBadGateway
		p.log(call)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer response.Body.Close()
	answer, err := io.ReadAll(response.Body)
	if rule != nil && rule.ResponseContains != "" && !bytes.Contains(answer, []byte(rule.ResponseContains)) {
		p.mu.Lock()
		rule.matched--
		rule.faulted--
		p.mu.Unlock()
		rule = nil
	}
	if rule != nil { // Reset: the emulator handled the call; its answer is lost.
		if rule.Hold != nil {
			<-rule.Hold
		}
		call.Fault = "reset"
		p.log(call)
		if hijacker, ok := w.(http.Hijacker); ok {
			if conn, _, err := hijacker.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	call.Status = response.StatusCode
	p.log(call)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for name, values := range response.Header {
		w.Header()[name] = values
	}
	w.WriteHeader(response.StatusCode)
	_, _ = w.Write(answer)
}

func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, error) {
	request, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	request.Header = r.Header.Clone()
	request.Host = r.Host
	return p.client.Do(request)
}

// operation is the call's operation name from X-Amz-Target ("AmazonSQS.ReceiveMessage"
// gives "ReceiveMessage"), or the Action form field of a query-protocol call.
func operation(r *http.Request) string {
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		return target[strings.LastIndex(target, ".")+1:]
	}
	return r.URL.Query().Get("Action")
}

// attempt reads the SDK's attempt number from "amz-sdk-request: attempt=2; max=3".
func attempt(r *http.Request) int {
	for _, part := range strings.Split(r.Header.Get("Amz-Sdk-Request"), ";") {
		if value, ok := strings.CutPrefix(strings.TrimSpace(part), "attempt="); ok {
			n, _ := strconv.Atoi(value)
			return n
		}
	}
	return 0
}

func contains(list []string, value string) bool {
	for _, item := range list {
		if item == value {
			return true
		}
	}
	return false
}
