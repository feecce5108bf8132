package faultproxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// TestFractionIsDeterministicAndLogged: with Fraction 0.3, calls 4, 7 and 10 of ten
// matching calls get the error answer; other operations pass; every call is logged.
func TestFractionIsDeterministicAndLogged(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	defer target.Close()
	proxy := faultproxy.New(t, target.URL)
	proxy.SetRules(faultproxy.Rule{Operations: []string{"DeleteMessageBatch"}, Fraction: 0.3, Status: 500, Code: "InternalError", Message: "boom"})
	call := func(operation string) int {
		request, _ := http.NewRequest(http.MethodPost, proxy.URL, strings.NewReader("{}"))
		request.Header.Set("X-Amz-Target", "AmazonSQS."+operation)
		request.Header.Set("Amz-Sdk-Request", "attempt=1; max=3")
		response, err := http.DefaultClient.Do(request)
		if err != nil {
			t.Fatal(err)
		}
		defer response.Body.Close()
		return response.StatusCode
	}
	var faulted []int
	for i := 1; i <= 10; i++ {
		if call("DeleteMessageBatch") == 500 {
			faulted = append(faulted, i)
		}
		if status := call("ReceiveMessage"); status != 200 {
			t.Errorf("ReceiveMessage answered %d, want 200", status)
		}
	}
	if len(faulted) != 3 || faulted[0] != 4 || faulted[1] != 7 || faulted[2] != 10 {
		t.Errorf("faulted calls %v, want [4 7 10]", faulted)
	}
	calls := proxy.Calls()
	if len(calls) != 20 || calls[0].Attempt != 1 || calls[0].Operation != "DeleteMessageBatch" {
		t.Errorf("log = %+v; want 20 calls with operation and attempt", calls)
	}
}

// TestDelayHoldsTheCall: a delayed call reaches the target after the delay; a client
// that gives up during the delay never reaches it, and the log says so.
func TestDelayHoldsTheCall(t *testing.T) {
	t.Parallel()
	var forwarded atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		forwarded.Add(1)
		_, _ = io.WriteString(w, "{}")
	}))
	defer target.Close()
	proxy := faultproxy.New(t, target.URL)
	const delay = 300 * time.Millisecond
	proxy.SetRules(faultproxy.Rule{Operations: []string{"ChangeMessageVisibilityBatch"}, Fraction: 1, Delay: delay})
	call := func(timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		request, _ := http.NewRequestWithContext(ctx, http.MethodPost, proxy.URL, strings.NewReader("{}"))
		request.Header.Set("X-Amz-Target", "AmazonSQS.ChangeMessageVisibilityBatch")
		response, err := http.DefaultClient.Do(request)
		if err != nil {
			return err
		}
		return response.Body.Close()
	}
	started := time.Now()
	if err := call(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(started); took < delay {
		t.Errorf("delayed call answered after %s, want at least %s", took, delay)
	}
	if err := call(50 * time.Millisecond); err == nil {
		t.Error("a client giving up after 50 ms got an answer")
	}
	// The proxy logs an abandoned call when its handler notices the client left.
	testenv.Eventually(t, 5*time.Second, "both calls logged", func() bool { return len(proxy.Calls()) == 2 })
	calls := proxy.Calls()
	if calls[0].Fault != "delayed 300ms" || calls[1].Fault != "abandoned" || forwarded.Load() != 1 {
		t.Errorf("log %+v, %d forwarded; want one delayed and forwarded, one abandoned", calls, forwarded.Load())
	}
}
