package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func TestJitteredStaysWithinAQuarter(t *testing.T) {
	t.Parallel()
	const d = 10 * time.Millisecond
	lowest, highest := d, d
	for range 10000 {
		got := jittered(d)
		lowest, highest = min(lowest, got), max(highest, got)
	}
	if lowest < d*3/4 || highest > d*5/4 {
		t.Errorf("jittered(%s) ranged %s..%s, want within %s..%s", d, lowest, highest, d*3/4, d*5/4)
	}
	if highest-lowest < d/4 {
		t.Errorf("jittered(%s) ranged only %s..%s", d, lowest, highest)
	}
}

// upstream answers every DeleteMessageBatch with its entries deleted (JSON protocol),
// as SQS does, and anything else with {}.
func upstream(t *testing.T) *httptest.Server {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".DeleteMessageBatch") {
			_, _ = io.WriteString(w, "{}")
			return
		}
		n := strings.Count(string(body), `"ReceiptHandle"`)
		entries := make([]string, n)
		for i := range entries {
			entries[i] = fmt.Sprintf(`{"Id":"%d"}`, i)
		}
		_, _ = io.WriteString(w, `{"Successful":[`+strings.Join(entries, ",")+`],"Failed":[]}`)
	}))
	t.Cleanup(server.Close)
	return server
}

func call(t *testing.T, proxy *countingProxy, op string, entries int) {
	t.Helper()
	body := "{" + strings.Repeat(`"ReceiptHandle":"x",`, entries) + `"QueueUrl":"q"}`
	request, err := http.NewRequestWithContext(context.Background(), http.MethodPost, proxy.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	request.Header.Set("X-Amz-Target", "AmazonSQS."+op)
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, response.Body)
	response.Body.Close()
}

// TestProxyClockRunsOnConfirmedDeletes: armed with a warm-up of 10 and a target of 30,
// the clock starts at the 10th confirmed delete and stops at the 30th, and the calls
// counted are those between the two.
func TestProxyClockRunsOnConfirmedDeletes(t *testing.T) {
	t.Parallel()
	proxy, err := startProxy(upstream(t).URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.close)
	warm, done := proxy.arm(10, 30)
	call(t, proxy, "ReceiveMessage", 0)
	call(t, proxy, "DeleteMessageBatch", 10)
	select {
	case <-warm:
	default:
		t.Fatal("warm not closed after 10 deletes")
	}
	call(t, proxy, "ReceiveMessage", 0)
	call(t, proxy, "ReceiveMessage", 0)
	call(t, proxy, "DeleteMessageBatch", 10)
	select {
	case <-done:
		t.Fatal("done closed after 20 deletes of 30")
	default:
	}
	call(t, proxy, "DeleteMessageBatch", 10)
	<-done
	call(t, proxy, "ReceiveMessage", 0) // after the clock stopped: not counted
	counts, warmAt, doneAt := proxy.snapshot()
	if counts["ReceiveMessage"] != 2 || counts["DeleteMessageBatch"] != 2 || len(counts) != 2 {
		t.Errorf("counts = %v, want 2 ReceiveMessage and 2 DeleteMessageBatch", counts)
	}
	if warmAt.IsZero() || !doneAt.After(warmAt) {
		t.Errorf("warm at %v, done at %v", warmAt, doneAt)
	}
}

// TestProxyAddsLatency: every call waits at least 3/4 of the latency.
func TestProxyAddsLatency(t *testing.T) {
	t.Parallel()
	const latency = 40 * time.Millisecond
	proxy, err := startProxy(upstream(t).URL, latency)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.close)
	for range 5 {
		began := time.Now()
		call(t, proxy, "ReceiveMessage", 0)
		if took := time.Since(began); took < latency*3/4 {
			t.Errorf("a call took %s, want at least %s", took, latency*3/4)
		}
	}
}

// TestProcessCPU reads this test process's own CPU time from /proc.
func TestProcessCPU(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	p := &process{pid: os.Getpid()}
	before, ok := p.cpu()
	if !ok {
		t.Fatal("cpu() not ok")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		after, _ := p.cpu()
		if after > before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time stayed at %s while spinning", before)
		}
		for i := 0; i < 1_000_000; i++ {
			_ = fmt.Sprint(i)
		}
	}
}
