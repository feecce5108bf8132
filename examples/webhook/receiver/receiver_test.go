package receiver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func start(t *testing.T, config Config) *Receiver {
	t.Helper()
	r, err := Start(config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func post(t *testing.T, ctx context.Context, url, id string) (int, error) {
	t.Helper()
	request, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if id != "" {
		request.Header.Set("Idempotency-Key", id)
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return 0, err
	}
	defer response.Body.Close()
	_, _ = io.Copy(io.Discard, response.Body)
	return response.StatusCode, nil
}

// eventually polls condition every 10 ms for up to 5 s.
func eventually(t *testing.T, what string, condition func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !condition() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStatusesAndCounts(t *testing.T) {
	r := start(t, Config{})
	tests := []struct {
		name, path, id string
		want           int
	}{
		{name: "hook", path: "/hooks/a", id: "d-1", want: 200},
		{name: "hook again", path: "/hooks/a", id: "d-1", want: 200},
		{name: "gone", path: "/gone/a", id: "d-2", want: 410},
		{name: "no idempotency key", path: "/hooks/a", want: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, err := post(t, context.Background(), r.URL()+tc.path, tc.id)
			if err != nil || status != tc.want {
				t.Errorf("POST %s = %d, %v; want %d", tc.path, status, err, tc.want)
			}
		})
	}
	// Counters move just after the flush, so possibly after the client read the response.
	eventually(t, "the last response to be counted", func() bool { return r.Counts()[""].Rejected == 1 })
	counts := r.Counts()
	want := map[string]Counts{
		"d-1": {Requests: 2, Successes: 2},
		"d-2": {Requests: 1, Gone: 1},
		"":    {Requests: 1, Rejected: 1},
	}
	for id, count := range want {
		if counts[id] != count {
			t.Errorf("Counts()[%q] = %+v, want %+v", id, counts[id], count)
		}
	}
	totals, delivered := r.Totals()
	if totals.Requests != 4 || totals.Successes != 2 || delivered != 1 {
		t.Errorf("Totals() = %+v, %d; want 4 requests, 2 successes, 1 delivered id", totals, delivered)
	}
	if r.LastResponseAt().IsZero() {
		t.Error("LastResponseAt is zero after responses")
	}
}

func TestFailureRateIsSeeded(t *testing.T) {
	statuses := func() string {
		r := start(t, Config{FailureRate: 0.5, Seed: 42})
		var sequence strings.Builder
		for i := range 200 {
			status, err := post(t, context.Background(), r.URL()+"/hooks/x", fmt.Sprintf("d-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			sequence.WriteString(map[int]string{200: "+", 503: "-"}[status])
		}
		return sequence.String()
	}
	first, second := statuses(), statuses()
	if first != second {
		t.Errorf("the same seed gave different failures:\n%s\n%s", first, second)
	}
	if failures := strings.Count(first, "-"); failures < 60 || failures > 140 {
		t.Errorf("%d of 200 requests failed with FailureRate 0.5", failures)
	}
}

func TestMaxFailuresPerDelivery(t *testing.T) {
	r := start(t, Config{FailureRate: 1, MaxFailuresPerDelivery: 2})
	var got []int
	for range 4 {
		status, err := post(t, context.Background(), r.URL()+"/hooks/x", "d-1")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, status)
	}
	if fmt.Sprint(got) != "[503 503 200 200]" {
		t.Errorf("statuses = %v, want [503 503 200 200]", got)
	}
	eventually(t, "two failures and two successes", func() bool {
		count := r.Counts()["d-1"]
		return count.Failures == 2 && count.Successes == 2
	})
}

func TestPauseHoldsRequestsUntilResume(t *testing.T) {
	r := start(t, Config{})
	if _, err := post(t, context.Background(), r.URL()+"/hooks/x", "d-0"); err != nil {
		t.Fatal(err)
	}
	r.Pause()
	before := r.LastResponseAt()
	done := make(chan int, 1)
	go func() {
		status, _ := post(t, context.Background(), r.URL()+"/hooks/x", "d-1")
		done <- status
	}()
	eventually(t, "the request to be held", func() bool { return r.Held() == 1 })
	select {
	case status := <-done:
		t.Fatalf("request answered %d while paused", status)
	case <-time.After(100 * time.Millisecond):
	}
	if !r.LastResponseAt().Equal(before) {
		t.Error("LastResponseAt moved while paused")
	}
	r.Resume()
	if status := <-done; status != 200 {
		t.Errorf("status after Resume = %d, want 200", status)
	}
	eventually(t, "one success, none held", func() bool { return r.Counts()["d-1"].Successes == 1 && r.Held() == 0 })
}

func TestCancelledWhilePausedIsNotASuccess(t *testing.T) {
	r := start(t, Config{})
	r.Pause()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := post(t, ctx, r.URL()+"/hooks/x", "d-1")
		done <- err
	}()
	eventually(t, "the request to be held", func() bool { return r.Held() == 1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled request succeeded")
	}
	eventually(t, "the request to be abandoned", func() bool { return r.Counts()["d-1"].Abandoned == 1 })
	r.Resume()
	if count := r.Counts()["d-1"]; count.Successes != 0 || count.Requests != 1 {
		t.Errorf("counts = %+v, want 1 request, 0 successes", count)
	}
}

// TestClosedConnectionResumedAtOnceIsNotASuccess is the demo's kill: the client's
// connection closes while its request is held and the receiver resumes right away,
// before net/http may have noticed. The response must not count as a success.
func TestClosedConnectionResumedAtOnceIsNotASuccess(t *testing.T) {
	r := start(t, Config{})
	const rounds = 20
	for i := range rounds {
		id := fmt.Sprintf("d-%d", i)
		r.Pause()
		connection, err := net.Dial("tcp", strings.TrimPrefix(r.URL(), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		body := `{"a":1}`
		fmt.Fprintf(connection, "POST /hooks/x HTTP/1.1\r\nHost: x\r\nIdempotency-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", id, len(body), body)
		eventually(t, "the request to be held", func() bool { return r.Held() == 1 })
		_ = connection.Close()
		r.Resume()
		eventually(t, "the request to end", func() bool { count := r.Counts()[id]; return count.Abandoned+count.Successes == 1 })
		if count := r.Counts()[id]; count.Successes != 0 {
			t.Fatalf("round %d: a response to a closed connection counted as a success: %+v", i, count)
		}
	}

	// A live raw connection still gets its success.
	connection, err := net.Dial("tcp", strings.TrimPrefix(r.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer connection.Close()
	fmt.Fprintf(connection, "POST /hooks/x HTTP/1.1\r\nHost: x\r\nIdempotency-Key: live\r\nContent-Length: 0\r\n\r\n")
	response, err := http.ReadResponse(bufio.NewReader(connection), nil)
	if err != nil || response.StatusCode != 200 {
		t.Fatalf("live connection: %v, %v", response, err)
	}
	// The success is counted just after the flush, so possibly after the client read it.
	eventually(t, "the live response to count as a success", func() bool { return r.Counts()["live"].Successes == 1 })
}

// TestReceiverAddressAndLog: a receiver on a given address logs each answered request.
func TestReceiverAddressAndLog(t *testing.T) {
	var log bytes.Buffer
	var mu sync.Mutex
	r, err := Start(Config{Address: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &log, mu: &mu}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	request, _ := http.NewRequest(http.MethodPost, r.URL()+"/hook", strings.NewReader("{}"))
	request.Header.Set("Idempotency-Key", "d-1")
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	response.Body.Close()
	// The line is written once the response has left, so the client can see the response
	// first: wait for it.
	logged := func() (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		text := log.String()
		return text, strings.Contains(text, "receiver: answered") && strings.Contains(text, "idempotency_key=d-1") && strings.Contains(text, "status=200")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		text, ok := logged()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line for the request within 10 s: %q", text)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
