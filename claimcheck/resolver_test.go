package claimcheck

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
)

// pointerMessage stores payload in client and returns a message pointing to it.
func pointerMessage(client *fakeS3, key, payload string) *sqsworker.Message {
	client.mu.Lock()
	client.objects["b/"+key] = []byte(payload)
	client.mu.Unlock()
	return &sqsworker.Message{
		ID:   "m-" + key,
		Body: Pointer{Bucket: "b", Key: key}.Body(),
		MessageAttributes: map[string]sqsworker.MessageAttribute{
			AttributePayloadSize: {DataType: "Number", StringValue: strconv.Itoa(len(payload))},
			"job-type":           {DataType: "String", StringValue: "resize"},
		},
	}
}

// allowB allows the whole bucket "b" of the fake.
var allowB = []Location{{Bucket: "b"}}

// middleware returns the resolver's middleware for config (Allow defaults to allowB).
func middleware(t *testing.T, client S3API, config ResolverConfig) sqsworker.Middleware {
	t.Helper()
	if config.Allow == nil {
		config.Allow = allowB
	}
	resolver, err := NewResolver(client, config)
	require.NoError(t, err)
	return resolver.Middleware()
}

func TestMiddlewareHandsTheHandlerThePayloadAndLeavesTheHostThePointer(t *testing.T) {
	client := newFakeS3()
	message := pointerMessage(client, "k1", "payload")
	pointerBody := message.Body
	var seenBody string
	var seenAttributes map[string]sqsworker.MessageAttribute
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		seenBody, seenAttributes = m.Body, m.MessageAttributes
		return sqsworker.Permanent("Broken", nil)
	}), middleware(t, client, ResolverConfig{}))

	err := handler.Handle(context.Background(), message)

	assert.Equal(t, sqsworker.OutcomeDeadLetter, sqsworker.Classify(err).Kind, "the handler's error is returned as it is")
	assert.Equal(t, "payload", seenBody)
	assert.NotContains(t, seenAttributes, AttributePayloadSize, "the handler does not see the pointer's attribute")
	assert.Equal(t, "resize", seenAttributes["job-type"].StringValue)
	assert.Equal(t, pointerBody, message.Body, "the host still holds the pointer (a dead-letter send copies it)")
	assert.Contains(t, message.MessageAttributes, AttributePayloadSize)
	_, stillThere := client.object("b", "k1")
	assert.True(t, stillThere, "the middleware never deletes the payload")
}

func TestMiddlewareLeavesThePointerAfterAPanic(t *testing.T) {
	client := newFakeS3()
	message := pointerMessage(client, "k1", "payload")
	pointerBody := message.Body
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		panic("boom")
	}), middleware(t, client, ResolverConfig{}))

	err := settle.Call(context.Background(), handler, message) // the hosts' recover wrapper

	assert.True(t, sqsworker.IsPanicError(err))
	assert.Equal(t, pointerBody, message.Body)
}

func TestMiddlewarePassesOtherMessagesThrough(t *testing.T) {
	client := newFakeS3()
	message := &sqsworker.Message{Body: Pointer{Bucket: "b", Key: "k"}.Body()} // a pointer-looking body without the attribute
	var seen string
	handler := middleware(t, client, ResolverConfig{})(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		seen = m.Body
		return nil
	}))
	require.NoError(t, handler.Handle(context.Background(), message))
	assert.Equal(t, message.Body, seen)
	assert.Zero(t, client.gets)
}

func TestMiddlewareFailures(t *testing.T) {
	neverCalled := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		t.Error("the handler must not run")
		return nil
	})
	t.Run("missing object is permanent", func(t *testing.T) {
		client := newFakeS3()
		message := pointerMessage(client, "gone", "payload")
		delete(client.objects, "b/gone")
		outcome := sqsworker.Classify(middleware(t, client, ResolverConfig{})(neverCalled).Handle(context.Background(), message))
		assert.Equal(t, sqsworker.OutcomeDeadLetter, outcome.Kind)
		assert.Equal(t, ReasonPayloadNotFound, outcome.Reason)
		assert.Contains(t, outcome.Err.Error(), "s3://b/gone")
	})
	t.Run("malformed pointer is permanent", func(t *testing.T) {
		client := newFakeS3()
		message := pointerMessage(client, "k", "payload")
		message.Body = `{"not":"a pointer"}`
		outcome := sqsworker.Classify(middleware(t, client, ResolverConfig{})(neverCalled).Handle(context.Background(), message))
		assert.Equal(t, sqsworker.OutcomeDeadLetter, outcome.Kind)
		assert.Equal(t, ReasonPayloadPointerInvalid, outcome.Reason)
	})
	t.Run("payload above the limit is permanent", func(t *testing.T) {
		client := newFakeS3()
		message := pointerMessage(client, "k", strings.Repeat("x", 11))
		outcome := sqsworker.Classify(middleware(t, client, ResolverConfig{MaxPayloadSize: 10})(neverCalled).Handle(context.Background(), message))
		assert.Equal(t, sqsworker.OutcomeDeadLetter, outcome.Kind)
		assert.Equal(t, ReasonPayloadTooLarge, outcome.Reason)
	})
	t.Run("other S3 errors are retried", func(t *testing.T) {
		client := newFakeS3()
		message := pointerMessage(client, "k", "payload")
		client.getErr = errors.New("AccessDenied")
		outcome := sqsworker.Classify(middleware(t, client, ResolverConfig{})(neverCalled).Handle(context.Background(), message))
		assert.Equal(t, sqsworker.OutcomeRetry, outcome.Kind)
		assert.Contains(t, outcome.Err.Error(), "AccessDenied")
	})
}

func TestNewResolverReportsEveryBadSetting(t *testing.T) {
	_, err := NewResolver(nil, ResolverConfig{
		Allow:          []Location{{KeyPrefix: "jobs/"}, {Bucket: "b", KeyPrefix: "jobs/../"}},
		MaxPayloadSize: 2 << 20, MaxBufferedBytes: 1 << 20,
	})
	require.Error(t, err)
	for _, want := range []string{"nil S3 client", "Allow[0]: the bucket is empty", `Allow[1]: "jobs/../" has a ".." path segment`, "MaxPayloadSize (2097152) is above MaxBufferedBytes (1048576)"} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = NewResolver(newFakeS3(), ResolverConfig{MaxPayloadSize: -1})
	assert.ErrorContains(t, err, "must not be negative")
	_, err = NewResolver(newFakeS3(), ResolverConfig{MaxBufferedBytes: 1 << 20})
	assert.NoError(t, err, "the default MaxPayloadSize shrinks to a smaller budget")
}

// The hostile messages: none of them reaches S3, the handler or the cleaner.
func TestResolverRefusesPointersOutsideTheAllowList(t *testing.T) {
	allow := []Location{{Bucket: "b", KeyPrefix: "jobs/"}}
	cases := map[string]struct {
		allow []Location
		key   string
		want  string
	}{
		"no allow-list":                {allow: []Location{}, key: "jobs/k", want: "no payload location is allowed"},
		"key outside the prefix":       {key: "secrets/k", want: "outside the allowed locations"},
		"prefix as a name prefix":      {key: "jobs-private/k", want: "outside the allowed locations"},
		"dot-dot segment":              {key: "jobs/../secrets/k", want: `".." path segment`},
		"dot segment":                  {key: "jobs/./k", want: `"." path segment`},
		"dot-dot at the end":           {key: "jobs/..", want: `".." path segment`},
		"percent-encoded dots":         {key: "jobs/%2e%2e/secrets/k", want: `character '%'`},
		"percent-encoded slash":        {key: "jobs%2F..%2Fsecrets%2Fk", want: `character '%'`},
		"backslash":                    {key: `jobs/..\secrets\k`, want: `character '\\'`},
		"doubled slash":                {key: "jobs//k", want: "empty path segment"},
		"leading slash":                {key: "/jobs/k", want: "empty path segment"},
		"query string":                 {key: "jobs/k?versionId=1", want: `character '?'`},
		"control character":            {key: "jobs/k\n", want: `character '\n'`},
		"non-ASCII look-alike":         {key: "jobs\u2215k", want: "outside S3's safe key characters"},
		"folder marker":                {key: "jobs/", want: `ends with "/"`},
		"key longer than S3's maximum": {key: "jobs/" + strings.Repeat("k", 1020), want: "above S3's 1024"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			client := newFakeS3()
			message := pointerMessage(client, "jobs/k", "payload")
			message.Body = Pointer{Bucket: "b", Key: c.key}.Body()
			cleaner := NewCleaner(client, CleanerConfig{})
			if c.allow == nil {
				c.allow = allow
			}
			resolver, err := NewResolver(client, ResolverConfig{Allow: c.allow, Cleaner: cleaner})
			require.NoError(t, err)
			outcome := sqsworker.Classify(resolver.Middleware()(neverCalled(t)).Handle(context.Background(), message))
			assert.Equal(t, sqsworker.OutcomeDeadLetter, outcome.Kind)
			assert.Equal(t, ReasonPayloadNotAllowed, outcome.Reason)
			assert.Contains(t, outcome.Err.Error(), c.want)
			assert.Zero(t, client.gets, "a refused pointer is never read")
			assert.Equal(t, ResolverStats{Refused: 1}, resolver.Stats())
			assert.Zero(t, cleaner.Stats().Tracked, "nor handed to the cleaner")
			require.NoError(t, cleaner.Shutdown(context.Background()))
		})
	}
	t.Run("another bucket", func(t *testing.T) {
		client := newFakeS3()
		client.objects["other/jobs/k"] = []byte("secret")
		message := pointerMessage(client, "jobs/k", "secret")
		message.Body = Pointer{Bucket: "other", Key: "jobs/k"}.Body()
		outcome := sqsworker.Classify(middleware(t, client, ResolverConfig{Allow: allow})(neverCalled(t)).Handle(context.Background(), message))
		assert.Equal(t, ReasonPayloadNotAllowed, outcome.Reason)
		assert.Contains(t, outcome.Err.Error(), "s3://other/jobs/k refused: outside the allowed locations [s3://b/jobs/*]")
		assert.Zero(t, client.gets)
	})
	t.Run("inside one of several locations", func(t *testing.T) {
		client := newFakeS3()
		message := pointerMessage(client, "python/k", "payload")
		var seen string
		handler := middleware(t, client, ResolverConfig{Allow: []Location{{Bucket: "b", KeyPrefix: "jobs/"}, {Bucket: "b", KeyPrefix: "python/"}}})(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
			seen = m.Body
			return nil
		}))
		require.NoError(t, handler.Handle(context.Background(), message))
		assert.Equal(t, "payload", seen)
	})
}

func neverCalled(t *testing.T) sqsworker.Handler {
	return sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		t.Error("the handler must not run")
		return nil
	})
}

// The size the message announces is checked before the read, the object's
// Content-Length before its body is read, and the body is read no further than the
// announced size.
func TestResolverRefusesSizesBeforeReading(t *testing.T) {
	big := strings.Repeat("x", 1000)
	cases := map[string]struct {
		announce   string
		hideLength bool
		reason     string
		want       string
		gets       int
		maxRead    int64
	}{
		"huge announced size":                  {announce: "10737418240", reason: ReasonPayloadTooLarge, want: "announces 10737418240 bytes, above the limit of 2000", gets: 0},
		"announced one byte above the limit":   {announce: "2001", reason: ReasonPayloadTooLarge, want: "announces 2001 bytes", gets: 0},
		"announced smaller than the object":    {announce: "10", reason: ReasonPayloadSizeMismatch, want: "is 1000 bytes (Content-Length), but the message announces 10; not read", gets: 1},
		"announced larger than the object":     {announce: "1500", reason: ReasonPayloadSizeMismatch, want: "is 1000 bytes (Content-Length), but the message announces 1500", gets: 1},
		"announced smaller, no Content-Length": {announce: "10", hideLength: true, reason: ReasonPayloadSizeMismatch, want: "holds more than 10 bytes, but the message announces 10", gets: 1, maxRead: 11},
		"announced larger, no Content-Length":  {announce: "1500", hideLength: true, reason: ReasonPayloadSizeMismatch, want: "holds 1000 bytes, but the message announces 1500", gets: 1, maxRead: 1000},
		"size not a number":                    {announce: "ten", reason: ReasonPayloadPointerInvalid, want: `the ExtendedPayloadSize attribute "ten" is not a size in bytes`, gets: 0},
		"negative size":                        {announce: "-1", reason: ReasonPayloadPointerInvalid, want: "is not a size in bytes", gets: 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			client := newFakeS3()
			client.hideLength = c.hideLength
			message := pointerMessage(client, "k", big)
			message.MessageAttributes[AttributePayloadSize] = sqsworker.MessageAttribute{DataType: "Number", StringValue: c.announce}
			outcome := sqsworker.Classify(middleware(t, client, ResolverConfig{MaxPayloadSize: 2000})(neverCalled(t)).Handle(context.Background(), message))
			assert.Equal(t, sqsworker.OutcomeDeadLetter, outcome.Kind)
			assert.Equal(t, c.reason, outcome.Reason)
			assert.Contains(t, outcome.Err.Error(), c.want)
			assert.Equal(t, c.gets, client.gets)
			assert.LessOrEqual(t, client.read.Load(), c.maxRead, "bytes read from the object")
		})
	}
	t.Run("Content-Length above the limit, size lied", func(t *testing.T) {
		client := newFakeS3()
		message := pointerMessage(client, "k", big)
		message.MessageAttributes[AttributePayloadSize] = sqsworker.MessageAttribute{DataType: "Number", StringValue: "50"}
		outcome := sqsworker.Classify(middleware(t, client, ResolverConfig{MaxPayloadSize: 100})(neverCalled(t)).Handle(context.Background(), message))
		assert.Equal(t, ReasonPayloadTooLarge, outcome.Reason)
		assert.Contains(t, outcome.Err.Error(), "is 1000 bytes (Content-Length), above the limit of 100; not read")
		assert.Zero(t, client.read.Load())
	})
}

// Concurrent deliveries share one byte budget: with room for two payloads, the third
// waits until a handler returns.
func TestResolverSharesOneByteBudget(t *testing.T) {
	client := newFakeS3()
	resolver, err := NewResolver(client, ResolverConfig{Allow: allowB, MaxPayloadSize: 100, MaxBufferedBytes: 200})
	require.NoError(t, err)
	inside := make(chan string, 3)
	release := make(chan struct{})
	handler := resolver.Middleware()(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		inside <- m.ID
		<-release
		return nil
	}))
	results := make(chan error, 3)
	for _, key := range []string{"a", "b", "c"} {
		message := pointerMessage(client, key, strings.Repeat(key, 100))
		go func() { results <- handler.Handle(context.Background(), message) }()
	}
	<-inside
	<-inside
	require.Eventually(t, func() bool { return resolver.Stats().Waiting == 1 }, 10*time.Second, time.Millisecond, "the third delivery waits for the budget")
	assert.Equal(t, int64(200), resolver.Stats().Buffered)
	assert.Len(t, inside, 0, "no third handler runs while two payloads are held")
	close(release)
	for range 3 {
		require.NoError(t, <-results)
	}
	assert.Equal(t, ResolverStats{Resolved: 3}, resolver.Stats())

	t.Run("a wait ends with the delivery's context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		hold := make(chan struct{})
		holding := resolver.Middleware()(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { <-hold; return nil }))
		done := make(chan error, 2)
		go func() {
			done <- holding.Handle(context.Background(), pointerMessage(client, "d", strings.Repeat("d", 100)))
		}()
		go func() {
			done <- holding.Handle(context.Background(), pointerMessage(client, "e", strings.Repeat("e", 100)))
		}()
		require.Eventually(t, func() bool { return resolver.Stats().Buffered == 200 }, 10*time.Second, time.Millisecond)
		waited := make(chan error, 1)
		go func() { waited <- handler.Handle(ctx, pointerMessage(client, "f", strings.Repeat("f", 100))) }()
		require.Eventually(t, func() bool { return resolver.Stats().Waiting == 1 }, 10*time.Second, time.Millisecond)
		cancel()
		err := <-waited
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, sqsworker.OutcomeRetry, sqsworker.Classify(err).Kind, "the delivery is retried later")
		close(hold)
		require.NoError(t, <-done)
		require.NoError(t, <-done)
		assert.Zero(t, resolver.Stats().Buffered)
	})
}

func TestResolverReadsTheBareObjectPointer(t *testing.T) {
	client := newFakeS3()
	message := pointerMessage(client, "k", "payload")
	message.Body = `{"s3BucketName": "b", "s3Key": "k"}` // sqs-extended-client for Node.js, compatible mode
	var seen string
	handler := middleware(t, client, ResolverConfig{})(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		seen = m.Body
		return nil
	}))
	require.NoError(t, handler.Handle(context.Background(), message))
	assert.Equal(t, "payload", seen)
}

func TestResolverHidesTheSharedMarkFromTheHandler(t *testing.T) {
	client := newFakeS3()
	message := pointerMessage(client, "k", "payload")
	message.MessageAttributes[AttributePayloadShared] = sqsworker.MessageAttribute{DataType: "String", StringValue: "1"}
	var seen map[string]sqsworker.MessageAttribute
	handler := middleware(t, client, ResolverConfig{})(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		seen = m.MessageAttributes
		return nil
	}))
	require.NoError(t, handler.Handle(context.Background(), message))
	assert.NotContains(t, seen, AttributePayloadShared)
	assert.Contains(t, message.MessageAttributes, AttributePayloadShared, "the host's message keeps it")
}

func TestResolverDiscardsOrphansOnlyWhenAsked(t *testing.T) {
	t.Run("missing object, DiscardOrphaned", func(t *testing.T) {
		client := newFakeS3()
		message := pointerMessage(client, "gone", "payload")
		delete(client.objects, "b/gone")
		resolver, err := NewResolver(client, ResolverConfig{Allow: allowB, DiscardOrphaned: true})
		require.NoError(t, err)
		require.NoError(t, resolver.Middleware()(neverCalled(t)).Handle(context.Background(), message), "the message is deleted unhandled")
		assert.Equal(t, ResolverStats{NotFound: 1, Orphaned: 1}, resolver.Stats())
	})
	t.Run("missing bucket is never discarded", func(t *testing.T) {
		client := newFakeS3()
		client.getErr = &s3types.NoSuchBucket{Message: aws.String("The specified bucket does not exist")}
		message := pointerMessage(client, "k", "payload")
		resolver, err := NewResolver(client, ResolverConfig{Allow: allowB, DiscardOrphaned: true})
		require.NoError(t, err)
		outcome := sqsworker.Classify(resolver.Middleware()(neverCalled(t)).Handle(context.Background(), message))
		assert.Equal(t, ReasonPayloadNotFound, outcome.Reason)
		assert.Equal(t, ResolverStats{NotFound: 1}, resolver.Stats())
	})
	t.Run("access denied is retried, never discarded", func(t *testing.T) {
		client := newFakeS3()
		client.getErr = &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}
		message := pointerMessage(client, "k", "payload")
		resolver, err := NewResolver(client, ResolverConfig{Allow: allowB, DiscardOrphaned: true})
		require.NoError(t, err)
		outcome := sqsworker.Classify(resolver.Middleware()(neverCalled(t)).Handle(context.Background(), message))
		assert.Equal(t, sqsworker.OutcomeRetry, outcome.Kind)
		assert.Equal(t, ResolverStats{}, resolver.Stats())
	})
}
