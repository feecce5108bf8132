package delivery

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker"
)

func message(body string) *sqsworker.Message {
	return &sqsworker.Message{ID: "m-1", Body: body, ReceiveCount: 1}
}

func body(url string) string {
	return `{"deliveryId":"d-123","url":"` + url + `","payload":{"event":"invoice.paid","amount":42}}`
}

func TestHandlerSendsPayloadAndHeaders(t *testing.T) {
	type seen struct {
		method, path, contentType, key, userAgent, body string
	}
	got := make(chan seen, 1)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payload, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Idempotency-Key"), r.Header.Get("User-Agent"), string(payload)}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer server.Close()

	err := Handler(Config{AllowNetworks: loopback}).Handle(context.Background(), message(body(server.URL+"/hooks/x")))
	if err != nil {
		t.Fatalf("Handle = %v, want nil", err)
	}
	want := seen{"POST", "/hooks/x", "application/json", "d-123", DefaultUserAgent, `{"event":"invoice.paid","amount":42}`}
	if request := <-got; request != want {
		t.Errorf("request = %+v\nwant      %+v", request, want)
	}
}

func TestHandlerAbsentPayloadIsNull(t *testing.T) {
	got := make(chan string, 1)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payload, _ := io.ReadAll(r.Body)
		got <- string(payload)
	}))
	defer server.Close()
	err := Handler(Config{AllowNetworks: loopback, UserAgent: "custom/1"}).Handle(context.Background(),
		message(`{"deliveryId":"d-1","url":"`+server.URL+`"}`))
	if err != nil {
		t.Fatalf("Handle = %v", err)
	}
	if payload := <-got; payload != "null" {
		t.Errorf("posted %q, want null", payload)
	}
}

// TestHandlerStatusOutcomes checks each status class against the outcome sqsworker.Classify
// takes for the handler's error.
func TestHandlerStatusOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter string
		wantKind   sqsworker.OutcomeKind
		wantReason string
		wantDelay  time.Duration
	}{
		{name: "200 delivered", status: 200, wantKind: sqsworker.OutcomeDelete},
		{name: "201 delivered", status: 201, wantKind: sqsworker.OutcomeDelete},
		{name: "204 delivered", status: 204, wantKind: sqsworker.OutcomeDelete},
		{name: "500 retried with backoff", status: 500, wantKind: sqsworker.OutcomeRetry, wantReason: "HandlerError"},
		{name: "502 retried with backoff", status: 502, wantKind: sqsworker.OutcomeRetry, wantReason: "HandlerError"},
		{name: "503 retried with backoff", status: 503, wantKind: sqsworker.OutcomeRetry, wantReason: "HandlerError"},
		{name: "503 with Retry-After", status: 503, retryAfter: "7", wantKind: sqsworker.OutcomeRetryAfter, wantReason: "RetryAfter", wantDelay: 7 * time.Second},
		{name: "429 with Retry-After seconds", status: 429, retryAfter: "3", wantKind: sqsworker.OutcomeRetryAfter, wantReason: "RetryAfter", wantDelay: 3 * time.Second},
		{name: "429 without Retry-After", status: 429, wantKind: sqsworker.OutcomeRetry, wantReason: "HandlerError"},
		{name: "429 with unusable Retry-After", status: 429, retryAfter: "soon", wantKind: sqsworker.OutcomeRetry, wantReason: "HandlerError"},
		{name: "408 with Retry-After 0", status: 408, retryAfter: "0", wantKind: sqsworker.OutcomeRetryAfter, wantReason: "RetryAfter"},
		{name: "408 without Retry-After", status: 408, wantKind: sqsworker.OutcomeRetry, wantReason: "HandlerError"},
		{name: "400 dead-lettered", status: 400, wantKind: sqsworker.OutcomeDeadLetter, wantReason: "HTTP400"},
		{name: "404 dead-lettered", status: 404, wantKind: sqsworker.OutcomeDeadLetter, wantReason: "HTTP404"},
		{name: "410 dead-lettered", status: 410, wantKind: sqsworker.OutcomeDeadLetter, wantReason: "HTTP410"},
		{name: "410 ignores Retry-After", status: 410, retryAfter: "5", wantKind: sqsworker.OutcomeDeadLetter, wantReason: "HTTP410"},
		{name: "422 dead-lettered", status: 422, wantKind: sqsworker.OutcomeDeadLetter, wantReason: "HTTP422"},
		{name: "redirect not followed", status: 302, wantKind: sqsworker.OutcomeDeadLetter, wantReason: "HTTP302"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int32
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				if tc.status/100 == 3 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, "endpoint says no")
			}))
			defer server.Close()

			err := Handler(Config{AllowNetworks: loopback}).Handle(context.Background(), message(body(server.URL+"/hooks/x")))
			outcome := sqsworker.Classify(err)
			if outcome.Kind != tc.wantKind || outcome.Reason != tc.wantReason || outcome.Delay != tc.wantDelay {
				t.Errorf("Classify(%v) = %s %q %s, want %s %q %s", err, outcome.Kind, outcome.Reason, outcome.Delay, tc.wantKind, tc.wantReason, tc.wantDelay)
			}
			if requests.Load() != 1 {
				t.Errorf("endpoint got %d requests, want 1", requests.Load())
			}
			if tc.wantKind == sqsworker.OutcomeDelete {
				return
			}
			statusErr, ok := errors.AsType[*StatusError](err)
			if !ok || statusErr.StatusCode != tc.status {
				t.Fatalf("error %v does not wrap a *StatusError with code %d", err, tc.status)
			}
			for _, want := range []string{"d-123", "HTTP " + strconv.Itoa(tc.status), "endpoint says no"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestHandlerRetryAfterHTTPDate(t *testing.T) {
	at := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", at)
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer server.Close()
	outcome := sqsworker.Classify(Handler(Config{AllowNetworks: loopback}).Handle(context.Background(), message(body(server.URL))))
	if outcome.Kind != sqsworker.OutcomeRetryAfter || outcome.Delay < 85*time.Second || outcome.Delay > 90*time.Second {
		t.Errorf("outcome = %s after %s, want retry-after about 90s", outcome.Kind, outcome.Delay)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name  string
		value string
		want  time.Duration
		ok    bool
	}{
		{name: "seconds", value: "120", want: 2 * time.Minute, ok: true},
		{name: "spaces", value: " 5 ", want: 5 * time.Second, ok: true},
		{name: "zero", value: "0", want: 0, ok: true},
		{name: "beyond a day", value: "999999", want: maxRetryAfter, ok: true},
		{name: "date ahead", value: "Thu, 02 Jan 2025 03:05:05 GMT", want: time.Minute, ok: true},
		{name: "date passed", value: "Thu, 02 Jan 2025 03:00:00 GMT", want: 0, ok: true},
		{name: "negative", value: "-1"},
		{name: "empty", value: ""},
		{name: "garbage", value: "later"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseRetryAfter(tc.value, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("parseRetryAfter(%q) = %s, %t; want %s, %t", tc.value, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestHandlerMalformedBodies(t *testing.T) {
	var requests atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	defer server.Close()
	tests := []struct {
		name string
		body string
	}{
		{name: "not JSON", body: `not json`},
		{name: "truncated JSON", body: `{"deliveryId":"d-1","url":`},
		{name: "trailing data", body: `{"deliveryId":"d-1","url":"` + server.URL + `"} {}`},
		{name: "array", body: `[]`},
		{name: "string", body: `"d-1"`},
		{name: "missing deliveryId", body: `{"url":"` + server.URL + `"}`},
		{name: "blank deliveryId", body: `{"deliveryId":"  ","url":"` + server.URL + `"}`},
		{name: "deliveryId not a string", body: `{"deliveryId":123,"url":"` + server.URL + `"}`},
		{name: "missing url", body: `{"deliveryId":"d-1"}`},
		{name: "url not http", body: `{"deliveryId":"d-1","url":"ftp://127.0.0.1/x"}`},
		{name: "url relative", body: `{"deliveryId":"d-1","url":"/hooks/x"}`},
		{name: "url unparsable", body: `{"deliveryId":"d-1","url":"http://[::1"}`},
		{name: "payload not JSON", body: `{"deliveryId":"d-1","url":"` + server.URL + `","payload":nope}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Handler(Config{AllowNetworks: loopback}).Handle(context.Background(), message(tc.body))
			outcome := sqsworker.Classify(err)
			if outcome.Kind != sqsworker.OutcomeDeadLetter || outcome.Reason != ReasonMalformedBody {
				t.Errorf("Classify(%v) = %s %q, want dead-letter %q", err, outcome.Kind, outcome.Reason, ReasonMalformedBody)
			}
		})
	}
	if requests.Load() != 0 {
		t.Errorf("malformed bodies made %d requests, want none", requests.Load())
	}
}

func TestHandlerTimeoutIsRetried(t *testing.T) {
	release := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer server.Close()
	defer close(release)

	start := time.Now()
	err := Handler(Config{AllowNetworks: loopback, Timeout: 100 * time.Millisecond}).Handle(context.Background(), message(body(server.URL)))
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Handle took %s with a 100ms timeout", elapsed)
	}
	if outcome := sqsworker.Classify(err); outcome.Kind != sqsworker.OutcomeRetry {
		t.Errorf("Classify(%v) = %s, want retry", err, outcome.Kind)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no response within 100ms") {
		t.Errorf("error %q should say it timed out and match context.DeadlineExceeded", err)
	}
}

func TestHandlerSlowBodyTimesOut(t *testing.T) {
	// Headers arrive, the body never ends: the timeout covers reading the body too, and
	// the endpoint has answered 2xx, so the delivery counts as done.
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer server.Close()
	start := time.Now()
	err := Handler(Config{AllowNetworks: loopback, Timeout: 100 * time.Millisecond}).Handle(context.Background(), message(body(server.URL)))
	if err != nil || time.Since(start) > 2*time.Second {
		t.Errorf("Handle = %v after %s, want nil within the timeout", err, time.Since(start))
	}
}

func TestHandlerConnectionRefusedIsRetried(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := listener.Addr().String()
	listener.Close()

	err = Handler(Config{AllowNetworks: loopback}).Handle(context.Background(), message(body("http://"+address+"/hooks/x")))
	if outcome := sqsworker.Classify(err); outcome.Kind != sqsworker.OutcomeRetry {
		t.Errorf("Classify(%v) = %s, want retry", err, outcome.Kind)
	}
	if !strings.Contains(err.Error(), "d-123") {
		t.Errorf("error %q does not name the delivery", err)
	}
}

func TestHandlerCancelledContextIsRetried(t *testing.T) {
	started := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // the server notices a closed connection only after the body
		close(started)
		<-r.Context().Done()
	}))
	defer server.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	err := Handler(Config{AllowNetworks: loopback}).Handle(ctx, message(body(server.URL)))
	if outcome := sqsworker.Classify(err); outcome.Kind != sqsworker.OutcomeRetry || !errors.Is(err, context.Canceled) {
		t.Errorf("Classify(%v) = %s, want retry matching context.Canceled", err, outcome.Kind)
	}
}
