package producer_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// countingProxy is a reverse proxy in front of the emulator's SQS endpoint that counts
// API calls by operation (the X-Amz-Target header of SQS's JSON protocol,
// "AmazonSQS.SendMessageBatch"), so a test counts the calls SQS really received.
type countingProxy struct {
	mu     sync.Mutex
	counts map[string]int
}

// newCountingSQS starts a proxy for this test and returns an SQS client that talks to
// the emulator through it.
func newCountingSQS(t *testing.T) (*sqs.Client, *countingProxy) {
	t.Helper()
	testenv.AWSConfig(t) // an emulator test: fails (or, in make test-stress's unit stage, skips) without one
	target, err := url.Parse(os.Getenv("AWS_ENDPOINT_URL_SQS"))
	if err != nil || target.Host == "" {
		t.Fatalf("AWS_ENDPOINT_URL_SQS %q is not a URL (run with `make test`)", os.Getenv("AWS_ENDPOINT_URL_SQS"))
	}
	proxy := &countingProxy{counts: map[string]int{}}
	reverse := httputil.NewSingleHostReverseProxy(target)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		operation := r.Header.Get("X-Amz-Target")
		operation = operation[strings.LastIndex(operation, ".")+1:]
		proxy.mu.Lock()
		proxy.counts[operation]++
		proxy.mu.Unlock()
		reverse.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	client := sqs.NewFromConfig(testenv.AWSConfig(t), func(o *sqs.Options) { o.BaseEndpoint = aws.String(server.URL) })
	return client, proxy
}

// count returns how many calls of operation went through the proxy.
func (p *countingProxy) count(operation string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[operation]
}
