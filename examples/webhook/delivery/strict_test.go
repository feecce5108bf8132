package delivery

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	handler := sqsworker.Chain(Handler(Config{AllowNetworks: loopback}), idempotency.Middleware(idempotency.NewMemoryStore(), idempotency.Config{
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
	return strings.Replace(base, "http://", "http://user:"+secret+"@", 1) + "/services/T0/" + secret + "?token=" + secret + "&sig=" + secret
}

// TestErrorsRedactTheTarget checks that error texts (logged and stored as the DLQ's
// failure-error attribute) carry neither the URL's user info, nor its path (a Slack or
// Discord webhook's token is its path), nor its query, and only a short excerpt of the
// receiver's answer. Before paths were redacted, the path's token was in every text.
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
		"HTTP 410":            `{"deliveryId":"d-1","url":"` + secretURL(server.URL) + `"}`,
		"connection refused":  `{"deliveryId":"d-1","url":"` + secretURL(closed) + `"}`,
		"refused destination": `{"deliveryId":"d-1","url":"` + secretURL("http://169.254.169.254") + `"}`,
		"not http":            `{"deliveryId":"d-1","url":"ftp://user:` + secret + `@127.0.0.1/` + secret + `?token=` + secret + `"}`,
		"opaque":              `{"deliveryId":"d-1","url":"mailto:` + secret + `@example.com"}`,
		"unparsable":          `{"deliveryId":"d-1","url":"http://user:` + secret + `@[::1/x?token=` + secret + `"}`,
	}
	for name, body := range cases {
		err := Handler(Config{AllowNetworks: loopback}).Handle(context.Background(), message(body))
		if err == nil {
			t.Fatalf("%s: Handle = nil", name)
		}
		if text := err.Error(); strings.Contains(text, secret) || strings.Contains(text, "user") {
			t.Errorf("%s: error text carries the URL's credentials or query: %s", name, text)
		}
	}
	err = Handler(Config{AllowNetworks: loopback}).Handle(context.Background(), message(cases["HTTP 410"]))
	text := err.Error()
	if !strings.Contains(text, "/REDACTED?REDACTED") || !strings.Contains(text, "HTTP 410 Gone: xxxx") {
		t.Errorf("error %q should name the redacted target and start the excerpt", text)
	}
	if n := strings.Count(text, "x"); n > maxErrorExcerpt+2 {
		t.Errorf("error %q carries %d bytes of the answer, want at most %d", text, n, maxErrorExcerpt)
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://a:b@example.com/hooks/x?token=1#frag":  "https://example.com/REDACTED?REDACTED",
		"https://example.com/hooks/x":                   "https://example.com/REDACTED",
		"https://hooks.slack.com/services/T0/B0/s3cr3t": "https://hooks.slack.com/REDACTED",
		"https://example.com/hooks/%2Fs3cr3t":           "https://example.com/REDACTED",
		"https://example.com/":                          "https://example.com/",
		"https://example.com":                           "https://example.com",
		"https://example.com/?":                         "https://example.com/?REDACTED",
		"mailto:s3cr3t@example.com":                     "mailto:REDACTED",
		"http://[::1/x?token=1":                         "(an unparsable URL)",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestAmbiguousBodiesAreNeverPosted: the idempotency middleware hashes the exact "url"
// and "payload" names (idempotency.HashJSONFields) while encoding/json matches names
// case-insensitively and keeps the last of two. A body whose "URL" or second "url" names
// another target, or whose payload holds a name twice, is dead-lettered as MalformedBody
// without a POST, so a duplicate with the same hash can never go elsewhere. Before the
// strict check, the "URL" body was posted to the second server although the hash
// covered the first, and the twice-named bodies were posted too.
func TestAmbiguousBodiesAreNeverPosted(t *testing.T) {
	good, goodPosts := countingServer(t)
	evil, evilPosts := countingServer(t)
	handler := sqsworker.Chain(Handler(Config{AllowNetworks: loopback}), idempotency.Middleware(idempotency.NewMemoryStore(), idempotency.Config{
		KeyFunc:     Key,
		KeyPrefix:   "webhook",
		PayloadHash: idempotency.HashJSONFields("url", "payload"),
		KeyOptional: true,
	}))
	for i, body := range []string{
		`{"deliveryId":"d-%d","url":"` + good.URL + `","URL":"` + evil.URL + `","payload":{}}`,
		`{"deliveryId":"d-%d","url":"` + good.URL + `","Url":"` + evil.URL + `","payload":{}}`,
		`{"deliveryId":"d-%d","url":"` + good.URL + `","url":"` + evil.URL + `","payload":{}}`,
		`{"deliveryId":"d-%d","url":"` + good.URL + `","payload":{"amount":1},"Payload":{"amount":1000}}`,
		`{"deliveryId":"d-%d","url":"` + good.URL + `","payload":{"amount":1,"amount":1000}}`,
		`{"deliveryId":"d-%d","url":"` + good.URL + `","payload":[{"a":{"b":1,"b":2}}]}`,
		`{"deliveryId":"d-%d","DeliveryId":"other","url":"` + good.URL + `","payload":{}}`,
	} {
		body = fmt.Sprintf(body, i)
		err := handler.Handle(context.Background(), message(body))
		outcome := sqsworker.Classify(err)
		assert.Equal(t, ReasonMalformedBody, outcome.Reason, "%s: %v", body, err)
		assert.ErrorContains(t, err, "body is ambiguous", body)
	}
	assert.Zero(t, goodPosts.Load()+evilPosts.Load(), "an ambiguous body was posted")
	// Names that only look alike are not refused, and nested names may repeat across objects.
	require.NoError(t, handler.Handle(context.Background(), message(`{"deliveryId":"d-ok","url":"`+good.URL+`","payload":{"url":1,"list":[{"a":1},{"a":2}]},"urls":[]}`)))
	assert.EqualValues(t, 1, goodPosts.Load())
}
