// Package delivery is the webhook-delivery handler of the example worker: each SQS
// message asks to POST a JSON payload to a URL, with the delivery id as idempotency key.
//
//	{"deliveryId":"d-123","url":"https://example.com/hooks/x","payload":{"event":"invoice.paid"}}
//
// The handler's error decides the message's fate through [sqsworker.Classify]:
//
//	2xx                                  nil: delivered, the message is deleted
//	408, 429, 503 with Retry-After       sqsworker.RetryAfter(the header's delay)
//	408, 429 without Retry-After, 5xx,   an ordinary error: retried with backoff until the
//	  timeout, connection refused          redrive policy moves it to the dead-letter queue
//	other 4xx, 3xx (redirects are        sqsworker.Permanent("HTTP410", ...): dead-lettered
//	  not followed), other codes           now, the reason naming the status code
//	bad JSON, no deliveryId or url,      sqsworker.Permanent("MalformedBody", ...)
//	  url not http(s), a name twice in
//	  an object, "URL" for "url"
//	url resolves to a loopback, private, sqsworker.Permanent("ForbiddenDestination", ...)
//	  link-local or other non-public
//	  address (not in AllowNetworks)
//
// Use it behind the idempotency middleware, keyed with [Key], so a delivery that
// succeeded is not posted again when SQS hands its message out twice:
//
//	handler := sqsworker.Chain(delivery.Handler(delivery.Config{}),
//		idempotency.Middleware(store, idempotency.Config{KeyFunc: delivery.Key}))
//
// [Parse] reads the body with the same function as [Key] (the idempotency package's
// strict JSON reader), so a body the middleware finds no key in is one the handler
// dead-letters: with Config.KeyOptional a delivery still never runs without its key.
//
// Whoever may send to the queue chooses the URL, and the worker posts from inside its
// network: by default the handler connects only to public unicast addresses. The check
// runs in the dialer (net.Dialer.Control) on every address the host name resolved to,
// so a name that resolves to a public address once and to 169.254.169.254 or 10.0.0.5
// at the connection (DNS rebinding) is still refused; Config.AllowNetworks lets chosen
// networks through (the demo's receiver on 127.0.0.1). See [DestinationError].
//
// Error texts (logged, and stored in the dead-letter copy's failure-error attribute) name
// the target with [RedactURL] (no user info, no path, no query) and carry at most 64
// bytes of the receiver's answer.
package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

// Defaults for [Config].
const (
	// DefaultTimeout bounds one POST, response headers and body included.
	DefaultTimeout = 5 * time.Second
	// DefaultUserAgent is the User-Agent header of every request.
	DefaultUserAgent = "sqsworker-webhook/1 (+https://github.com/sqsworker/sqsworker)"
)

// ReasonMalformedBody is the [sqsworker.PermanentError] reason for a message that is not
// a valid delivery request.
const ReasonMalformedBody = "MalformedBody"

// maxErrorExcerpt bounds how many bytes of a failed response's body go into the error
// text (and so into logs and the failure-error attribute).
const maxErrorExcerpt = 64

// KeyField is the JSON field of a delivery message that holds its idempotency key.
const KeyField = "deliveryId"

// keyFunc reads KeyField with the idempotency package's strict JSON reader (only the
// end of the input may follow the value).
var keyFunc = idempotency.KeyFromJSONField(KeyField)

// Key is the [idempotency.KeyFunc] of a delivery message: its deliveryId, read by
// [idempotency.KeyFromJSONField]. Its errors match [idempotency.ErrKeyMissing]; [Parse]
// rejects every body Key rejects.
func Key(message *sqsworker.Message) (string, error) {
	return keyFunc(message)
}

// RedactURL returns raw for error texts and logs: scheme and host only, without user
// info and fragment, with a path other than "/" replaced by "/REDACTED" and a query by
// "REDACTED" ("https://example.com/REDACTED?REDACTED"), since all of them carry
// credentials or tokens in common webhook URLs (a Slack or Discord webhook's token is
// its path). An unparsable URL is "(an unparsable URL)".
func RedactURL(raw string) string {
	target, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	target.User = nil
	target.Fragment, target.RawFragment = "", ""
	if target.Opaque != "" {
		target.Opaque = "REDACTED"
	}
	if target.Path != "" && target.Path != "/" {
		target.Path, target.RawPath = "/REDACTED", ""
	}
	if target.RawQuery != "" || target.ForceQuery {
		target.RawQuery, target.ForceQuery = "REDACTED", false
	}
	return target.String()
}

// excerpt returns the start of a response body for an error text: at most
// maxErrorExcerpt bytes of valid UTF-8, control characters as spaces, "…" when cut.
func excerpt(head []byte) string {
	text := strings.ToValidUTF8(string(head), "")
	text = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, text)
	text = strings.TrimSpace(text)
	if len(text) <= maxErrorExcerpt {
		return text
	}
	cut := maxErrorExcerpt
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}

// maxDrain bounds how much of a response body is read to reuse the connection.
const maxDrain = 64 << 10

// Request is the body of a delivery message.
type Request struct {
	// DeliveryID identifies the delivery; it is sent as the Idempotency-Key header.
	DeliveryID string `json:"deliveryId"`
	// URL is the http or https endpoint the payload is posted to.
	URL string `json:"url"`
	// Payload is posted as the request body, byte for byte. An absent payload is posted
	// as JSON null.
	Payload json.RawMessage `json:"payload"`
}

// Parse decodes and validates a delivery message body. It first reads the key with
// [Key], so every body without a usable idempotency key is an error here too, then
// refuses a body that two JSON readers could read differently (a name twice in one
// object, a top-level name that differs from a field only in case), so the URL and
// payload it returns are those idempotency.HashJSONFields("url", "payload") hashed. Its errors
// describe what is wrong (URLs redacted); [Handler] wraps them as
// sqsworker.Permanent("MalformedBody", err).
func Parse(body string) (*Request, error) {
	key, err := keyFunc(&sqsworker.Message{Body: body})
	if err != nil {
		return nil, fmt.Errorf("delivery: no usable %s: %w", KeyField, err)
	}
	if err := checkFields(body); err != nil {
		return nil, fmt.Errorf("delivery %s: body is ambiguous: %w", key, err)
	}
	var request Request
	if err := json.Unmarshal([]byte(body), &request); err != nil {
		return nil, fmt.Errorf("delivery: body is not a delivery request: %w", err)
	}
	if strings.TrimSpace(request.DeliveryID) == "" || request.DeliveryID != key {
		return nil, fmt.Errorf("delivery: %s is missing, empty or not a string", KeyField)
	}
	if request.URL == "" {
		return nil, fmt.Errorf("delivery %s: url is missing or empty", request.DeliveryID)
	}
	target, err := url.Parse(request.URL)
	if err != nil {
		// url.Parse's error quotes the whole URL; keep only its reason.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return nil, fmt.Errorf("delivery %s: url %s: %w", request.DeliveryID, RedactURL(request.URL), err)
	}
	if (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil, fmt.Errorf("delivery %s: url %s is not an absolute http or https URL", request.DeliveryID, RedactURL(request.URL))
	}
	if len(request.Payload) == 0 {
		request.Payload = json.RawMessage("null")
	}
	return &request, nil
}

// Config configures [Handler]. The zero value is usable.
type Config struct {
	// Client specifies the HTTP client; if nil, a client that follows no redirect (a
	// redirected POST would lose its body or its method), uses no proxy (it would hide
	// the destination from the guard) and connects only to public addresses or those in
	// AllowNetworks. A given client is used as it is, without that guard.
	Client *http.Client
	// AllowNetworks are the networks the default client may connect to although they
	// are not public (loopback, private, link-local, ...; see [DestinationError]), for a
	// receiver on this host or in a private network ([ParseNetworks] reads them from a
	// list). Empty: only public unicast addresses. Ignored when Client is set.
	AllowNetworks []netip.Prefix
	// resolver replaces the system's for the default client (tests).
	resolver *net.Resolver
	// Timeout specifies the bound of one POST, reading the response included; if zero,
	// defaults to DefaultTimeout (5 s). The handler's context can end it earlier.
	Timeout time.Duration
	// UserAgent specifies the User-Agent header; if empty, defaults to DefaultUserAgent.
	UserAgent string
}

// StatusError is the error for a response outside 2xx. Handler wraps it with
// sqsworker.Permanent or sqsworker.RetryAfter as the status calls for.
type StatusError struct {
	DeliveryID string
	// URL is the target as [RedactURL] returns it.
	URL        string
	StatusCode int
	// Body is an excerpt of the response body (at most 64 bytes, "…" when cut), for the
	// log and the failure-error attribute.
	Body string
}

// Error returns "delivery d-1: POST http://...: HTTP 503 Service Unavailable: body".
func (e *StatusError) Error() string {
	text := fmt.Sprintf("delivery %s: POST %s: HTTP %d %s", e.DeliveryID, e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Body != "" {
		text += ": " + e.Body
	}
	return text
}

// Handler returns the webhook-delivery [sqsworker.Handler] described in the package comment.
func Handler(config Config) sqsworker.Handler {
	if config.Client == nil {
		config.Client = guardedClient(config.AllowNetworks, config.resolver)
	}
	if config.Timeout <= 0 {
		config.Timeout = DefaultTimeout
	}
	if config.UserAgent == "" {
		config.UserAgent = DefaultUserAgent
	}
	return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		request, err := Parse(message.Body)
		if err != nil {
			return sqsworker.Permanent(ReasonMalformedBody, err)
		}
		return config.deliver(ctx, request)
	})
}

func (c Config) deliver(parent context.Context, request *Request) error {
	ctx, cancel := context.WithTimeout(parent, c.Timeout)
	defer cancel()
	httpRequest, err := http.NewRequestWithContext(ctx, http.MethodPost, request.URL, bytes.NewReader(request.Payload))
	if err != nil {
		return sqsworker.Permanent(ReasonMalformedBody, fmt.Errorf("delivery %s: %w", request.DeliveryID, err))
	}
	httpRequest.Header.Set("Content-Type", "application/json")
	httpRequest.Header.Set("Idempotency-Key", request.DeliveryID)
	httpRequest.Header.Set("User-Agent", c.UserAgent)
	target := RedactURL(request.URL)
	response, err := c.Client.Do(httpRequest)
	if err != nil {
		// Connection refused, reset, DNS failure, timeout or the handler's context ending:
		// all transient. A timeout keeps its context.DeadlineExceeded in the chain. The
		// client's *url.Error quotes the whole URL (query included): keep only its cause.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		if refused := (*DestinationError)(nil); errors.As(err, &refused) {
			// The address is what the name resolves to: retrying cannot change that in time.
			return sqsworker.Permanent(ReasonForbiddenDestination, fmt.Errorf("delivery %s: POST %s: %w", request.DeliveryID, target, refused))
		}
		if errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
			return fmt.Errorf("delivery %s: POST %s: no response within %s: %w", request.DeliveryID, target, c.Timeout, err)
		}
		return fmt.Errorf("delivery %s: POST %s: %w", request.DeliveryID, target, err)
	}
	defer response.Body.Close()
	if response.StatusCode >= 200 && response.StatusCode < 300 {
		// Read (a bounded amount of) the body so the connection can be reused. The
		// endpoint has accepted the delivery; a failure to read the rest changes nothing.
		_, _ = io.Copy(io.Discard, io.LimitReader(response.Body, maxDrain))
		return nil
	}
	head, _ := io.ReadAll(io.LimitReader(response.Body, 4*maxErrorExcerpt))
	_, _ = io.Copy(io.Discard, io.LimitReader(response.Body, maxDrain))
	statusErr := &StatusError{
		DeliveryID: request.DeliveryID,
		URL:        target,
		StatusCode: response.StatusCode,
		Body:       excerpt(head),
	}
	return classifyStatus(statusErr, response.Header.Get("Retry-After"), time.Now())
}

// classifyStatus maps a non-2xx status to the handler's error.
func classifyStatus(err *StatusError, retryAfter string, now time.Time) error {
	code := err.StatusCode
	switch {
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		// RFC 9110 §10.2.3 defines Retry-After for 503 as well as 429 (and servers send it
		// with 408 too). Without a usable header these are ordinary retries.
		if delay, ok := parseRetryAfter(retryAfter, now); ok {
			return sqsworker.RetryAfter(delay, err)
		}
		return err
	case code >= 500 && code < 600:
		return err
	default:
		// Other 4xx, unfollowed 3xx, 1xx that ended the exchange, codes outside the
		// standard ranges: retrying the same request cannot succeed.
		return sqsworker.Permanent("HTTP"+strconv.Itoa(code), err)
	}
}

// maxRetryAfter bounds a Retry-After delay in seconds before its conversion to a
// time.Duration; the hosts clamp it further to SQS's visibility limit.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP-date. A date in
// the past means "now" (delay 0).
func parseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if seconds, err := strconv.ParseInt(value, 10, 64); err == nil {
		if seconds < 0 {
			return 0, false
		}
		// The host clamps the delay to what SQS's visibility limit allows; the bound here
		// only keeps the conversion from overflowing.
		return time.Duration(min(seconds, int64(maxRetryAfter/time.Second))) * time.Second, true
	}
	if at, err := http.ParseTime(value); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}
