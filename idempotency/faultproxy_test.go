package idempotency_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// proxyCall is one request the fault proxy forwarded: its DynamoDB operation
// (X-Amz-Target without the "DynamoDB_20120810." prefix) and its JSON body.
type proxyCall struct {
	operation string
	body      []byte
}

// faultProxy is an HTTP proxy between a DynamoDB client and the emulator. It logs every
// call and holds a request that hold matches until the returned channel is closed.
// Kept in this package's tests (a shared internal/testing/faultproxy may replace it).
type faultProxy struct {
	server *httptest.Server

	mu    sync.Mutex
	calls []proxyCall
	// hold, when set, is asked about every request; a non-nil channel holds the request
	// until it is closed.
	hold func(operation string, body []byte) <-chan struct{}
}

func newFaultProxy(t *testing.T) *faultProxy {
	t.Helper()
	endpoint := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
	if endpoint == "" {
		t.Fatal("AWS_ENDPOINT_URL_DYNAMODB is not set; run the tests with `make test`, which starts the emulator")
	}
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{}
	forward := httputil.NewSingleHostReverseProxy(target)
	p.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		operation := r.Header.Get("X-Amz-Target")
		if len(operation) > len("DynamoDB_20120810.") {
			operation = operation[len("DynamoDB_20120810."):]
		}
		p.mu.Lock()
		p.calls = append(p.calls, proxyCall{operation: operation, body: body})
		hold := p.hold
		p.mu.Unlock()
		if hold != nil {
			if release := hold(operation, body); release != nil {
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(p.server.Close)
	return p
}

// client returns a DynamoDB client that goes through the proxy.
func (p *faultProxy) client(t *testing.T) *dynamodb.Client {
	return dynamodb.NewFromConfig(testenv.AWSConfig(t), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.server.URL) })
}

func (p *faultProxy) setHold(hold func(operation string, body []byte) <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = hold
}

func (p *faultProxy) log() []proxyCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]proxyCall(nil), p.calls...)
}
