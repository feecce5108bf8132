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
//	  url not http(s)
//
// Use it behind the idempotency middleware, keyed on deliveryId, so a delivery that
// succeeded is not posted again when SQS hands its message out twice:
//
//	handler := sqsworker.Chain(delivery.Handler(delivery.Config{}),
//		idempotency.Middleware(store, idempotency.Config{KeyFunc: idempotency.KeyFromJSONField("deliveryId")}))
package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker"
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

// maxErrorBody bounds how much of a failed response's body goes into the error text.
const maxErrorBody = 256

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

// Parse decodes and validates a delivery message body. Its errors describe what is
// wrong; [Handler] wraps them as sqsworker.Permanent("MalformedBody", err).
func Parse(body string) (*Request, error) {
	decoder := json.NewDecoder(strings.NewReader(body))
	var request Request
	if err := decoder.Decode(&request); err != nil {
		return nil, fmt.Errorf("delivery: body is not a delivery request: %w", err)
	}
	if decoder.More() {
		return nil, errors.New("delivery: trailing data after the JSON body")
	}
	if strings.TrimSpace(request.DeliveryID) == "" {
		return nil, errors.New("delivery: deliveryId is missing or empty")
	}
	if request.URL == "" {
		return nil, fmt.Errorf("delivery %s: url is missing or empty", request.DeliveryID)
	}
	target, err := url.Parse(request.URL)
	if err != nil {
		return nil, fmt.Errorf("delivery %s: url: %w", request.DeliveryID, err)
	}
	if (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil, fmt.Errorf("delivery %s: url %q is not an absolute http or https URL", request.DeliveryID, request.URL)
	}
	if len(request.Payload) == 0 {
		request.Payload = json.RawMessage("null")
	}
	return &request, nil
}

// Config configures [Handler]. The zero value is usable.
type Config struct {
	// Client specifies the HTTP client; if nil, a client that does not follow
	// redirects (a redirected POST would lose its body or its method) is used. A given
	// client is used as it is.
	Client *http.Client
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
	URL        string
	StatusCode int
	// Body is the start of the response body, for the log and the failure-error attribute.
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
		config.Client = &http.Client{
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
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
	response, err := c.Client.Do(httpRequest)
	if err != nil {
		// Connection refused, reset, DNS failure, timeout or the handler's context ending:
		// all transient. A timeout keeps its context.DeadlineExceeded in the chain.
		if errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
			return fmt.Errorf("delivery %s: POST %s: no response within %s: %w", request.DeliveryID, request.URL, c.Timeout, err)
		}
		return fmt.Errorf("delivery %s: %w", request.DeliveryID, err)
	}
	defer response.Body.Close()
	if response.StatusCode >= 200 && response.StatusCode < 300 {
		// Read (a bounded amount of) the body so the connection can be reused. The
		// endpoint has accepted the delivery; a failure to read the rest changes nothing.
		_, _ = io.Copy(io.Discard, io.LimitReader(response.Body, maxDrain))
		return nil
	}
	head, _ := io.ReadAll(io.LimitReader(response.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(response.Body, maxDrain))
	statusErr := &StatusError{
		DeliveryID: request.DeliveryID,
		URL:        request.URL,
		StatusCode: response.StatusCode,
		Body:       strings.TrimSpace(strings.ToValidUTF8(string(head), "")),
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
		// Beyond SQS's 12-hour limit the delay is clamped by the host anyway.
		return time.Duration(min(seconds, int64(sqsworker.MaxVisibilityTimeout/time.Second))) * time.Second, true
	}
	if at, err := http.ParseTime(value); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}
