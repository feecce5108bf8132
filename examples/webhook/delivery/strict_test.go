package delivery

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

// TestGuardedHandlerNeverRunsUnguarded sends each body the idempotency middleware finds no
// key in three times through the example's chain (KeyOptional, as in main.go): each is
// dead-lettered as MalformedBody and no POST is made. Before Parse reused the idempotency
// package's strict reader, a trailing "]" or "}" passed Parse and was posted 3 times.
func TestGuardedHandlerNeverRunsUnguarded(t *testing.T) {
	var posts atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1) }))
	defer server.Close()
	valid := `{"deliveryId":"d-1","url":"` + server.URL + `","payload":{}}`
	handler := sqsworker.Chain(Handler(Config{}), idempotency.Middleware(idempotency.NewMemoryStore(), idempotency.Config{
		KeyFunc:     Key,
		KeyPrefix:   "webhook",
		PayloadHash: idempotency.HashJSONFields("url", "payload"),
		KeyOptional: true,
	}))
	for _, body := range []string{valid + "]", valid + "}", valid + " ]", `{"url":"` + server.URL + `"}`} {
		for range 3 {
			err := handler.Handle(context.Background(), message(body))
			outcome := sqsworker.Classify(err)
			if outcome.Kind != sqsworker.OutcomeDeadLetter || outcome.Reason != ReasonMalformedBody {
				t.Errorf("body %q: Classify(%v) = %s %q, want dead-letter %q", body, err, outcome.Kind, outcome.Reason, ReasonMalformedBody)
			}
		}
	}
	if n := posts.Load(); n != 0 {
		t.Errorf("bodies without a usable key made %d POSTs, want 0", n)
	}
	// The valid body, 3 times: one POST.
	for range 3 {
		if err := handler.Handle(context.Background(), message(valid)); err != nil {
			t.Fatalf("valid delivery: %v", err)
		}
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("one delivery sent 3 times made %d POSTs, want 1", n)
	}
}

const secret = "s3cr3t-token"

func secretURL(base string) string {
	return strings.Replace(base, "http://", "http://user:"+secret+"@", 1) + "/hooks/x?token=" + secret + "&sig=" + secret
}

// TestErrorsRedactTheTarget checks that error texts (logged and stored as the DLQ's
// failure-error attribute) carry neither the URL's user info nor its query, and only a
// short excerpt of the receiver's answer.
func TestErrorsRedactTheTarget(t *testing.T) {
	long := strings.Repeat("x", 200) + secret
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusGone)
		_, _ = w.Write([]byte(long))
	}))
	defer server.Close()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + listener.Addr().String()
	listener.Close()

	cases := map[string]string{
		"HTTP 410":           `{"deliveryId":"d-1","url":"` + secretURL(server.URL) + `"}`,
		"connection refused": `{"deliveryId":"d-1","url":"` + secretURL(closed) + `"}`,
		"not http":           `{"deliveryId":"d-1","url":"ftp://user:` + secret + `@127.0.0.1/x?token=` + secret + `"}`,
		"unparsable":         `{"deliveryId":"d-1","url":"http://user:` + secret + `@[::1/x?token=` + secret + `"}`,
	}
	for name, body := range cases {
		err := Handler(Config{}).Handle(context.Background(), message(body))
		if err == nil {
			t.Fatalf("%s: Handle = nil", name)
		}
		if text := err.Error(); strings.Contains(text, secret) || strings.Contains(text, "user") {
			t.Errorf("%s: error text carries the URL's credentials or query: %s", name, text)
		}
	}
	err = Handler(Config{}).Handle(context.Background(), message(cases["HTTP 410"]))
	text := err.Error()
	if !strings.Contains(text, "/hooks/x?REDACTED") || !strings.Contains(text, "HTTP 410 Gone: xxxx") {
		t.Errorf("error %q should name the redacted target and start the excerpt", text)
	}
	if n := strings.Count(text, "x"); n > maxErrorExcerpt+2 {
		t.Errorf("error %q carries %d bytes of the answer, want at most %d", text, n, maxErrorExcerpt)
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://a:b@example.com/hooks/x?token=1#frag": "https://example.com/hooks/x?REDACTED",
		"https://example.com/hooks/x":                  "https://example.com/hooks/x",
		"https://example.com/?":                        "https://example.com/?REDACTED",
		"http://[::1/x?token=1":                        "(an unparsable URL)",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
