package claimcheck_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
)

// deniedS3 is a reverse proxy in front of moto's S3 that answers the first `times`
// GetObject calls with S3's 403 AccessDenied error document (what S3 answers a role
// without s3:GetObject, or without s3:ListBucket for a missing key), and forwards every
// other call. internal/testing/faultproxy speaks the JSON protocols (X-Amz-Target); S3 is REST
// and XML.
type deniedS3 struct {
	times, denied, gets atomic.Int64
}

func (d *deniedS3) client(t *testing.T) *s3.Client {
	t.Helper()
	target, err := url.Parse(os.Getenv("AWS_ENDPOINT_URL_S3"))
	require.NoError(t, err)
	forward := httputil.NewSingleHostReverseProxy(target)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		isGet := r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 && r.URL.Query().Get("list-type") == ""
		if isGet {
			d.gets.Add(1)
			if d.denied.Load() < d.times.Load() {
				d.denied.Add(1)
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>test</RequestId></Error>`))
				return
			}
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	return s3.NewFromConfig(testenv.AWSConfig(t), func(o *s3.Options) {
		o.UsePathStyle = true
		o.BaseEndpoint = &server.URL
	})
}

// CASES.md N21 (b): AccessDenied is not NoSuchKey. It is retried with the visibility
// backoff, never discarded (DiscardOrphaned on), and the job runs once the policy is
// fixed (here: on the second receive).
func TestAccessDeniedPayloadIsRetriedNeverDiscardedOnEmulator(t *testing.T) {
	t.Parallel()
	client, plain := testenv.SQS(t), s3Client(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5, VisibilityTimeout: 5 * time.Second})
	jobs, store := jobProducer(t, client, plain)
	body := largeBody("denied")
	pointer := sendOffloaded(t, jobs, store, queue.URL, body)

	proxy := &deniedS3{}
	proxy.times.Store(1)
	var calls handled
	resolver := newResolver(t, proxy.client(t), claimcheck.ResolverConfig{Allow: []claimcheck.Location{store.Location()}, DiscardOrphaned: true})
	server, err := poller.New(client, poller.Config{QueueURL: queue.URL, WaitTime: time.Second}, sqsworker.Chain(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		calls.add(m)
		return nil
	}), resolver.Middleware()))
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() { _ = server.Shutdown(context.Background()) })

	testenv.Eventually(t, patience, "the job handled after the denied read", func() bool { return server.Stats().Deleted == 1 })
	require.NoError(t, server.Shutdown(context.Background()))
	got := calls.all()
	require.Len(t, got, 1)
	assert.Equal(t, 2, got[0].receiveCount, "handled on the second receive: the first, denied, was retried")
	assert.True(t, got[0].body == body)
	assert.Equal(t, int64(1), proxy.denied.Load())
	assert.Equal(t, int64(2), proxy.gets.Load())
	assert.Equal(t, claimcheck.ResolverStats{Resolved: 1}, resolver.Stats(), "AccessDenied is neither a missing payload nor an orphan")
	assert.Equal(t, int64(1), server.Stats().Failed, "the denied attempt counts as a failure")
	assert.Zero(t, server.Stats().DeadLettered)
	assert.True(t, objectExists(t, plain, pointer), "no cleaner here: the object stays")
}
