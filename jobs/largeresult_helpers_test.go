package jobs_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/jobs"
)

// resultsPrefix is the key prefix of the tests' large results.
const resultsPrefix = "job-results/"

// s3Client returns an S3 client for moto (path-style: the emulator is reached by IP).
func s3Client(t testing.TB) *s3.Client {
	t.Helper()
	cfg := testenv.AWSConfig(t)
	if os.Getenv("AWS_ENDPOINT_URL_S3") == "" {
		t.Fatal("AWS_ENDPOINT_URL_S3 is not set; run the tests with the emulator's settings (eval \"$(localstack/env)\")")
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
}

// newBucket creates a uniquely named bucket and removes it, objects first, at the end.
func newBucket(t testing.TB, client *s3.Client) string {
	t.Helper()
	name := strings.ToLower(testenv.UniqueName(t))
	_, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, key := range objectKeys(t, client, name, "") {
			_, _ = client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String(key)})
		}
		_, _ = client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
	})
	return name
}

// objectKeys lists the bucket's keys under prefix.
func objectKeys(t testing.TB, client *s3.Client, bucket, prefix string) []string {
	t.Helper()
	out, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	require.NoError(t, err)
	keys := make([]string, 0, len(out.Contents))
	for _, object := range out.Contents {
		keys = append(keys, aws.ToString(object.Key))
	}
	return keys
}

// countingS3 counts the S3 calls of a store by operation.
type countingS3 struct {
	jobs.S3API
	mu         sync.Mutex
	puts, gets int
}

func (c *countingS3) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	c.mu.Lock()
	c.puts++
	c.mu.Unlock()
	return c.S3API.PutObject(ctx, in, opts...)
}

func (c *countingS3) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.S3API.GetObject(ctx, in, opts...)
}

// counts returns the PutObject and GetObject calls so far.
func (c *countingS3) counts() (puts, gets int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.puts, c.gets
}

// largeSetup is a store with large results on a fresh table and bucket.
type largeSetup struct {
	store  *jobs.Store
	db     *countingAPI
	s3     *countingS3
	raw    *s3.Client
	table  string
	bucket string
}

// newLargeStore returns a store keeping large results under resultsPrefix in a fresh
// bucket, with config's other fields (its Table is set here).
func newLargeStore(t *testing.T, config jobs.Config) largeSetup {
	t.Helper()
	client := testenv.DynamoDB(t)
	raw := s3Client(t)
	setup := largeSetup{db: newCountingAPI(client), raw: raw, table: testenv.NewTable(t, client), bucket: newBucket(t, raw)}
	setup.s3 = &countingS3{S3API: raw}
	config.Table = setup.table
	config.LargeResults = &jobs.LargeResults{Client: setup.s3, Location: claimcheck.Location{Bucket: setup.bucket, KeyPrefix: resultsPrefix}}
	store, err := jobs.NewStore(setup.db, config)
	require.NoError(t, err)
	setup.store = store
	return setup
}

// bigResult is a result whose JSON encoding is about n bytes.
type bigResult struct {
	Rows []string `json:"rows"`
}

func newBigResult(n int) bigResult {
	var r bigResult
	for size := 0; size < n; size += 1000 {
		r.Rows = append(r.Rows, strings.Repeat(string(rune('a'+len(r.Rows)%26)), 997))
	}
	return r
}
