package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/producer"
)

// TestCLIJobs: `jobs get` shows a recorded job (text and JSON), `jobs cancel` cancels a
// job not started yet and refuses a finished one, saying so.
func TestCLIJobs(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	table := testenv.NewTable(t, db)
	store, err := jobs.NewStore(db, jobs.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	done := producer.NewJobID()
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		if err := jobs.Progress(ctx, map[string]int{"rows": 10}); err != nil {
			return err
		}
		return jobs.SetResult(ctx, map[string]string{"file": "s3://exports/e-1.csv"})
	}), store.Middleware(jobs.MiddlewareConfig{}))
	message := &sqsworker.Message{ID: "m-1", Body: "{}", ReceiveCount: 1, MessageAttributes: map[string]sqsworker.MessageAttribute{
		sqsworker.AttributeJobID: {DataType: "String", StringValue: done}, sqsworker.AttributeJobType: {DataType: "String", StringValue: "export"},
	}}
	if err := handler.Handle(context.Background(), message); err != nil {
		t.Fatal(err)
	}

	got := decode[jobView](t, want(t, exitOK, "jobs", "get", done, "--table", table, "-o", "json"))
	if got.ID != done || got.State != jobs.StateSucceeded || got.Attempts != 1 || got.Type != "export" ||
		compact(got.Result) != `{"file":"s3://exports/e-1.csv"}` || compact(got.Progress) != `{"rows":10}` {
		t.Fatalf("jobs get -o json = %+v", got)
	}
	r := want(t, exitOK, "jobs", "get", done, "--table", table)
	for _, line := range []string{"State:       succeeded", "Attempts:    1", `Result:      {"file":"s3://exports/e-1.csv"}`} {
		if !strings.Contains(r.stdout, line) {
			t.Fatalf("jobs get: no %q in\n%s", line, r.stdout)
		}
	}
	if r := want(t, exitOK, "jobs", "get", done, "--table", table, "--result"); r.stdout != `{"file":"s3://exports/e-1.csv"}`+"\n" {
		t.Fatalf("jobs get --result: %q", r.stdout)
	}
	r = want(t, exitError, "jobs", "cancel", done, "--table", table)
	if !strings.Contains(r.stderr, "has already finished (succeeded); nothing to cancel") {
		t.Fatalf("cancel a finished job: %s", r.stderr)
	}

	queued := producer.NewJobID()
	r = want(t, exitOK, "jobs", "cancel", queued, "--table", table)
	if !strings.Contains(r.stdout, "Job "+queued+" cancelled: it will not run.") {
		t.Fatalf("cancel a queued job: %s", r.stdout)
	}
	if got := decode[jobView](t, want(t, exitOK, "jobs", "get", queued, "--table", table, "-o", "json")); got.State != jobs.StateCancelled || !got.CancelRequested {
		t.Fatalf("after cancel: %+v", got)
	}
	if r := want(t, exitError, "jobs", "get", queued, "--table", table, "--result"); !strings.Contains(r.stderr, "the job has no result") {
		t.Fatalf("--result of a job without one: %s", r.stderr)
	}
	r = want(t, exitError, "jobs", "get", producer.NewJobID(), "--table", table)
	if !strings.Contains(r.stderr, "no record of job") {
		t.Fatalf("get an unknown job: %s", r.stderr)
	}
}

// compact is a JSON document without its whitespace (the CLI indents its JSON output).
func compact(document []byte) string { return strings.Join(strings.Fields(string(document)), "") }

// TestCLIJobsLargeResult: a job whose 600 KB result the worker kept in S3
// (jobs.Config.LargeResults): `jobs get` shows the reference (result_ref under -o json,
// no result), --result prints the whole document byte for byte (read from S3 inside
// --results-bucket and --results-prefix), and refuses without them or with another
// location.
func TestCLIJobsLargeResult(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	table := testenv.NewTable(t, db)
	s3Client := s3.NewFromConfig(testenv.AWSConfig(t), func(o *s3.Options) { o.UsePathStyle = true })
	bucket := strings.ToLower(testenv.UniqueName(t))
	if _, err := s3Client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		out, _ := s3Client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		if out != nil {
			for _, object := range out.Contents {
				_, _ = s3Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: object.Key})
			}
		}
		_, _ = s3Client.DeleteBucket(context.Background(), &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	})
	const prefix = "job-results/"
	store, err := jobs.NewStore(db, jobs.Config{Table: table, LargeResults: &jobs.LargeResults{Client: s3Client, Location: claimcheck.Location{Bucket: bucket, KeyPrefix: prefix}}})
	if err != nil {
		t.Fatal(err)
	}
	type export struct{ Rows []string }
	result := export{}
	for len(result.Rows) < 600 {
		result.Rows = append(result.Rows, strings.Repeat("r", 1000))
	}
	document, err := json.Marshal(result)
	if err != nil {
		t.Fatal(err)
	}
	id := producer.NewJobID()
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		return jobs.SetResult(ctx, result)
	}), store.Middleware(jobs.MiddlewareConfig{}))
	message := &sqsworker.Message{ID: "m-1", Body: "{}", ReceiveCount: 1, MessageAttributes: map[string]sqsworker.MessageAttribute{
		sqsworker.AttributeJobID: {DataType: "String", StringValue: id},
	}}
	if err := handler.Handle(context.Background(), message); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(document)
	key := prefix + id + "/" + hex.EncodeToString(sum[:])

	got := decode[jobView](t, want(t, exitOK, "jobs", "get", id, "--table", table, "-o", "json"))
	if got.ResultRef == nil || got.ResultRef.Bucket != bucket || got.ResultRef.Key != key || got.ResultRef.Size != int64(len(document)) || len(got.Result) != 0 {
		t.Fatalf("jobs get -o json: result_ref %+v, result %d bytes", got.ResultRef, len(got.Result))
	}
	r := want(t, exitOK, "jobs", "get", id, "--table", table)
	if line := fmt.Sprintf("Result:      in S3: s3://%s/%s (%d bytes, SHA-256 %x); --result prints it", bucket, key, len(document), sum); !strings.Contains(r.stdout, line) {
		t.Fatalf("jobs get: no %q in\n%s", line, r.stdout)
	}
	location := []string{"--results-bucket", bucket, "--results-prefix", prefix}
	r = want(t, exitOK, append([]string{"jobs", "get", id, "--table", table, "--result"}, location...)...)
	if r.stdout != string(document)+"\n" {
		t.Fatalf("jobs get --result: %d bytes, want the %d-byte document and a newline", len(r.stdout), len(document))
	}
	got = decode[jobView](t, want(t, exitOK, append([]string{"jobs", "get", id, "--table", table, "--result", "-o", "json"}, location...)...))
	var read export
	if err := json.Unmarshal(got.Result, &read); err != nil || len(read.Rows) != 600 || read.Rows[599] != result.Rows[599] || got.ResultRef == nil {
		t.Fatalf("jobs get --result -o json: %d rows (%v), result_ref %+v", len(read.Rows), err, got.ResultRef)
	}

	r = want(t, exitError, "jobs", "get", id, "--table", table, "--result")
	if !strings.Contains(r.stderr, "result is in S3 (s3://"+bucket+"/"+key+"): give --results-bucket") {
		t.Fatalf("--result without the location: %s", r.stderr)
	}
	r = want(t, exitError, "jobs", "get", id, "--table", table, "--result", "--results-bucket", bucket, "--results-prefix", "other/")
	if !strings.Contains(r.stderr, "the result reference is outside the configured location") {
		t.Fatalf("--result with another location: %s", r.stderr)
	}
	want(t, exitUsage, "jobs", "get", id, "--table", table, "--result", "--results-prefix", prefix)
}
