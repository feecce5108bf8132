package jobs_test

// Large results kept in S3 (jobs.LargeResults) on the local services: moto S3 and
// DynamoDB, the SQS emulator, on both hosts.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/table"
)

// digestOf is the hex SHA-256 of document.
func digestOf(document []byte) string {
	sum := sha256.Sum256(document)
	return hex.EncodeToString(sum[:])
}

// rawItem reads job id's record item as DynamoDB holds it.
func rawItem(t *testing.T, setup largeSetup, id string) map[string]types.AttributeValue {
	t.Helper()
	k, err := table.JobRecordKey(id)
	require.NoError(t, err)
	out, err := testenv.DynamoDB(t).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(setup.table), Key: table.KeyAttribute(k), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return out.Item
}

// itemBytes is the item's size as DynamoDB counts it, roughly: names plus string values.
func itemBytes(item map[string]types.AttributeValue) int {
	n := 0
	for name, value := range item {
		n += len(name)
		switch v := value.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberM:
			n += itemBytes(v.Value)
		default:
			n += 8
		}
	}
	return n
}

// TestEmulatorLargeResult: a handler on either host sets a 600 KB result; it is kept in
// S3 under the prefix and the job id (one PutObject), the record holds only the
// reference (no result attribute, the item under 1 KB), and Store.Result reads it back
// byte for byte (one GetObject per read).
func TestEmulatorLargeResult(t *testing.T) {
	t.Parallel()
	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
			setup := newLargeStore(t, jobs.Config{})
			result := newBigResult(600 * 1000)
			want, err := json.Marshal(result)
			require.NoError(t, err)
			require.Greater(t, len(want), 600*1000)
			mux := sqsworker.NewServeMux()
			sqsworker.RegisterJSON(mux, "export", func(ctx context.Context, job struct{}) error {
				return jobs.SetResult(ctx, result)
			})
			h.start(t, client, queue.URL, sqsworker.Chain(mux, setup.store.Middleware(jobs.MiddlewareConfig{})))

			id := send(t, client, queue.URL, producer.Job{Type: "export", Payload: struct{}{}})
			r := waitState(t, setup.store, id, jobs.StateSucceeded, 30*time.Second)
			require.NotNil(t, r.ResultRef)
			assert.Empty(t, r.Result, "the record holds only the reference")
			assert.Equal(t, jobs.ResultRef{Bucket: setup.bucket, Key: resultsPrefix + id + "/" + digestOf(want), Size: int64(len(want)), SHA256: digestOf(want)}, *r.ResultRef)
			item := rawItem(t, setup, id)
			assert.NotContains(t, item, "result")
			assert.Less(t, itemBytes(item), 1024, "the item stays small")
			assert.Equal(t, []string{r.ResultRef.Key}, objectKeys(t, setup.raw, setup.bucket, resultsPrefix+id+"/"))

			got, err := setup.store.Result(context.Background(), id)
			require.NoError(t, err)
			assert.True(t, string(want) == string(got), "byte-exact: %d bytes read, %d written", len(got), len(want))
			puts, gets := setup.s3.counts()
			assert.Equal(t, 1, puts, "one PutObject per large result")
			assert.Equal(t, 1, gets, "one GetObject per read")
			assert.Equal(t, 2, setup.db.writes(), "the record's writes are the start's and the end's, as for a small result: %v", setup.db.snapshot())
			t.Logf("%d-byte result: PutObject %d, GetObject %d per read, DynamoDB writes %d, record item about %d bytes", len(want), puts, gets, setup.db.writes(), itemBytes(item))
			testenv.WaitQueueEmpty(t, client, queue.URL, 30*time.Second)
		})
	}
}

// TestEmulatorLargeResultInIdempotencyRecord: under the idempotency middleware with
// InIdempotencyRecord, the idempotency record keeps the reference document in place of
// the result; Store.Get exposes it as ResultRef and Store.Result reads the document; a
// duplicate of the completed job receives the reference, and the handler ran once.
func TestEmulatorLargeResultInIdempotencyRecord(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	setup := newLargeStore(t, jobs.Config{})
	idemStore := idempotency.NewDynamoDBStore(db, setup.table)
	store, err := jobs.NewStore(db, jobs.Config{Table: setup.table, Idempotency: idemStore, LargeResults: &jobs.LargeResults{Client: setup.s3, Location: claimcheck.Location{Bucket: setup.bucket, KeyPrefix: resultsPrefix}}})
	require.NoError(t, err)
	result := newBigResult(600 * 1000)
	want, err := json.Marshal(result)
	require.NoError(t, err)
	runs := 0
	var duplicateRef jobs.ResultRef
	var duplicateOK bool
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		runs++
		return jobs.SetResult(ctx, result)
	}), idempotency.Middleware(idemStore, idempotency.Config{OnCompletedDuplicate: func(ctx context.Context, m *sqsworker.Message, r idempotency.Record) error {
		duplicateRef, duplicateOK = jobs.ParseResultRef(r.Result)
		return nil
	}}), store.Middleware(jobs.MiddlewareConfig{InIdempotencyRecord: true}))

	id := producer.NewJobID()
	require.NoError(t, handler.Handle(context.Background(), message(t, id, 1)))
	require.NoError(t, handler.Handle(context.Background(), message(t, id, 1)), "a duplicate")
	assert.Equal(t, 1, runs)
	require.True(t, duplicateOK, "the duplicate receives the reference")
	r, err := store.Get(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateSucceeded, r.State)
	require.NotNil(t, r.ResultRef)
	assert.Empty(t, r.Result)
	assert.Equal(t, *r.ResultRef, duplicateRef)
	assert.Equal(t, resultsPrefix+id+"/"+digestOf(want), r.ResultRef.Key)
	got, err := store.Result(context.Background(), id)
	require.NoError(t, err)
	assert.True(t, string(want) == string(got), "byte-exact")
}

// TestEmulatorLargeResultHostileJobIDs: jobs whose job id (the message's attribute, set
// by whoever sends) would leave the job's place under the prefix, or is too long for an
// object key segment, get ErrResultJobID from SetResult, and nothing is written to S3;
// their small results are still recorded.
func TestEmulatorLargeResultHostileJobIDs(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	setup := newLargeStore(t, jobs.Config{})
	hostile := []string{"../x", "..", ".", "a/b", "/etc/passwd", "x/../../other-prefix/y", "%2e%2e%2fx", `a\b`, "tab\tid", strings.Repeat("j", jobs.MaxResultJobIDBytes+1), strings.Repeat("h", 1500)}
	var mu sync.Mutex
	errs := map[string]error{}
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		err := jobs.SetResult(ctx, newBigResult(300*1000))
		mu.Lock()
		errs[m.JobID()] = err
		mu.Unlock()
		return jobs.SetResult(ctx, map[string]string{"large": "refused"})
	})
	startPoller(t, client, queue.URL, sqsworker.Chain(handler, setup.store.Middleware(jobs.MiddlewareConfig{})))
	for _, id := range hostile {
		_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: aws.String("{}"),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{sqsworker.AttributeJobID: {DataType: aws.String("String"), StringValue: aws.String(id)}}})
		require.NoError(t, err)
	}
	for _, id := range hostile {
		r := waitState(t, setup.store, id, jobs.StateSucceeded, 30*time.Second)
		assert.JSONEq(t, `{"large":"refused"}`, string(r.Result), "%q", id)
		assert.Nil(t, r.ResultRef, "%q", id)
		mu.Lock()
		assert.ErrorIs(t, errs[id], jobs.ErrResultJobID, "%.40q", id)
		mu.Unlock()
	}
	assert.Empty(t, objectKeys(t, setup.raw, setup.bucket, ""), "nothing written to S3")
	puts, _ := setup.s3.counts()
	assert.Zero(t, puts)
}

// TestEmulatorResultRefTampered: a record whose reference was changed (by hand, or by
// another writer) to another bucket, a key outside the prefix, another job's key, a
// climbing key, a malformed digest or an unbounded size is refused with
// ErrResultRefNotAllowed before any GetObject; an object overwritten under its key is
// refused with ErrResultMismatch; a store without LargeResults reads no object.
func TestEmulatorResultRefTampered(t *testing.T) {
	t.Parallel()
	setup := newLargeStore(t, jobs.Config{})
	result := newBigResult(300 * 1000)
	want, err := json.Marshal(result)
	require.NoError(t, err)
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		return jobs.SetResult(ctx, result)
	}), setup.store.Middleware(jobs.MiddlewareConfig{}))
	id, other := producer.NewJobID(), producer.NewJobID()
	require.NoError(t, handler.Handle(context.Background(), message(t, id, 1)))
	require.NoError(t, handler.Handle(context.Background(), message(t, other, 1)))
	good, err := setup.store.Get(context.Background(), id)
	require.NoError(t, err)
	require.NotNil(t, good.ResultRef)
	digest := good.ResultRef.SHA256

	setRef := func(ref jobs.ResultRef) {
		t.Helper()
		k, err := table.JobRecordKey(id)
		require.NoError(t, err)
		_, err = testenv.DynamoDB(t).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
			TableName: aws.String(setup.table), Key: table.KeyAttribute(k),
			UpdateExpression:          aws.String("SET result_ref = :r"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"bucket": &types.AttributeValueMemberS{Value: ref.Bucket}, "key": &types.AttributeValueMemberS{Value: ref.Key}, "size": &types.AttributeValueMemberN{Value: strconv.FormatInt(ref.Size, 10)}, "sha256": &types.AttributeValueMemberS{Value: ref.SHA256}}}},
		})
		require.NoError(t, err)
	}
	size := int64(len(want))
	_, getsBefore := setup.s3.counts()
	for _, c := range []struct {
		name string
		ref  jobs.ResultRef
	}{
		{"another bucket", jobs.ResultRef{Bucket: "someone-elses-bucket", Key: good.ResultRef.Key, Size: size, SHA256: digest}},
		{"outside the prefix", jobs.ResultRef{Bucket: setup.bucket, Key: "secrets/" + id + "/" + digest, Size: size, SHA256: digest}},
		{"another job's key", jobs.ResultRef{Bucket: setup.bucket, Key: resultsPrefix + other + "/" + digest, Size: size, SHA256: digest}},
		{"climbing out of the prefix", jobs.ResultRef{Bucket: setup.bucket, Key: resultsPrefix + "../secrets/" + digest, Size: size, SHA256: digest}},
		{"percent-encoded climb", jobs.ResultRef{Bucket: setup.bucket, Key: resultsPrefix + "%2e%2e/secrets/" + digest, Size: size, SHA256: digest}},
		{"digest not hex", jobs.ResultRef{Bucket: setup.bucket, Key: resultsPrefix + id + "/secret", Size: size, SHA256: "secret"}},
		{"size over the bound", jobs.ResultRef{Bucket: setup.bucket, Key: good.ResultRef.Key, Size: jobs.MaxLargeResultBytes + 1, SHA256: digest}},
		{"size zero", jobs.ResultRef{Bucket: setup.bucket, Key: good.ResultRef.Key, Size: 0, SHA256: digest}},
	} {
		setRef(c.ref)
		_, err := setup.store.Result(context.Background(), id)
		assert.ErrorIs(t, err, jobs.ErrResultRefNotAllowed, c.name)
		t.Logf("%s: %v", c.name, err)
	}
	_, gets := setup.s3.counts()
	assert.Equal(t, getsBefore, gets, "no refused reference is read")

	setRef(*good.ResultRef)
	got, err := setup.store.Result(context.Background(), id)
	require.NoError(t, err)
	assert.True(t, string(want) == string(got))

	// The object overwritten under its key: same size, other bytes; then another size.
	overwrite := func(body string) {
		t.Helper()
		_, err := setup.raw.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(setup.bucket), Key: aws.String(good.ResultRef.Key), Body: strings.NewReader(body)})
		require.NoError(t, err)
	}
	overwrite(`"` + strings.Repeat("z", len(want)-2) + `"`)
	_, err = setup.store.Result(context.Background(), id)
	assert.ErrorIs(t, err, jobs.ErrResultMismatch)
	overwrite(`{"short":true}`)
	_, err = setup.store.Result(context.Background(), id)
	assert.ErrorIs(t, err, jobs.ErrResultMismatch)

	plain, err := jobs.NewStore(setup.db, jobs.Config{Table: setup.table})
	require.NoError(t, err)
	_, err = plain.Result(context.Background(), other)
	assert.ErrorIs(t, err, jobs.ErrLargeResultsOff)
}

// TestEmulatorLargeResultBounds: a result over MaxLargeResultBytes is refused without a
// PutObject; a result shaped like the reference is refused; under the idempotency
// middleware alone a large result is refused; a job's later attempts replace its
// result of either kind (the record never holds both).
func TestEmulatorLargeResultBounds(t *testing.T) {
	t.Parallel()
	setup := newLargeStore(t, jobs.Config{})
	huge := strings.Repeat("h", jobs.MaxLargeResultBytes)
	var setErr, reservedErr error
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		setErr = jobs.SetResult(ctx, huge)
		reservedErr = jobs.SetResult(ctx, json.RawMessage(`{"sqsworker_result_ref":{"bucket":"b","key":"k","size":1,"sha256":"x"}}`))
		return nil
	}), setup.store.Middleware(jobs.MiddlewareConfig{}))
	require.NoError(t, handler.Handle(context.Background(), message(t, producer.NewJobID(), 1)))
	assert.ErrorIs(t, setErr, jobs.ErrResultTooLarge)
	assert.ErrorIs(t, reservedErr, jobs.ErrReservedResult)
	puts, _ := setup.s3.counts()
	assert.Zero(t, puts)

	idemStore := idempotency.NewDynamoDBStore(testenv.DynamoDB(t), setup.table)
	var idemErr error
	idemOnly := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		idemErr = jobs.SetResult(ctx, newBigResult(300*1000))
		return nil
	}), idempotency.Middleware(idemStore, idempotency.Config{}))
	require.NoError(t, idemOnly.Handle(context.Background(), message(t, producer.NewJobID(), 1)))
	assert.ErrorIs(t, idemErr, jobs.ErrResultTooLarge, "no job middleware: no S3")

	// Attempt 1 sets a small result and fails, 2 a large one and fails, 3 a small one.
	id := producer.NewJobID()
	attempts := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		if m.ReceiveCount == 2 {
			require.NoError(t, jobs.SetResult(ctx, newBigResult(300*1000)))
			return errors.New("503")
		}
		require.NoError(t, jobs.SetResult(ctx, map[string]int{"attempt": m.ReceiveCount}))
		if m.ReceiveCount == 1 {
			return errors.New("503")
		}
		return nil
	}), setup.store.Middleware(jobs.MiddlewareConfig{}))
	require.Error(t, attempts.Handle(context.Background(), message(t, id, 1)))
	assert.Contains(t, rawItem(t, setup, id), "result")
	require.Error(t, attempts.Handle(context.Background(), message(t, id, 2)))
	item := rawItem(t, setup, id)
	assert.Contains(t, item, "result_ref")
	assert.NotContains(t, item, "result", "the large result replaces the small one")
	require.NoError(t, attempts.Handle(context.Background(), message(t, id, 3)))
	item = rawItem(t, setup, id)
	assert.NotContains(t, item, "result_ref", "the small result replaces the reference")
	got, err := setup.store.Result(context.Background(), id)
	require.NoError(t, err)
	assert.JSONEq(t, `{"attempt":3}`, string(got))
}
