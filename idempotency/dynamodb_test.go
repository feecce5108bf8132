package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/idempotency/idempotencytest"
)

// recordingAPI is a DynamoDBAPI fake that records every request in order and answers
// with the configured results.
type recordingAPI struct {
	mu       sync.Mutex
	requests []any

	putErr    error
	getItem   map[string]types.AttributeValue
	updateErr error
	deleteErr error
}

func (r *recordingAPI) record(input any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, input)
}

func (r *recordingAPI) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.record(in)
	return &dynamodb.PutItemOutput{}, r.putErr
}

func (r *recordingAPI) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.record(in)
	return &dynamodb.GetItemOutput{Item: r.getItem}, nil
}

func (r *recordingAPI) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.record(in)
	return &dynamodb.UpdateItemOutput{}, r.updateErr
}

func (r *recordingAPI) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.record(in)
	return &dynamodb.DeleteItemOutput{}, r.deleteErr
}

func s(value string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: value} }
func n(value string) *types.AttributeValueMemberN { return &types.AttributeValueMemberN{Value: value} }

const claimCondition = "attribute_not_exists(#id) OR #expiration < :now OR (#status = :in_progress AND #in_progress_expiry < :now_ms AND attribute_not_exists(#interrupted))"

// TestDynamoDBClaimRequest asserts the exact conditional PutItem of a claim.
func TestDynamoDBClaimRequest(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_790_000_000_123) // 2026-09-21T...: seconds 1790000000, ms ...123
	record := idempotency.Record{
		Key:                 "order#O-9",
		Status:              idempotency.StatusInProgress,
		ExpiresAt:           time.Unix(1_790_003_601, 0),
		InProgressExpiresAt: time.UnixMilli(1_790_000_010_456),
		Lease:               "LEASE1",
		PayloadHash:         "abc123",
	}
	tests := []struct {
		name    string
		options []idempotency.DynamoDBOption
		want    *dynamodb.PutItemInput
	}{
		{
			name: "FastPathDefaultNames",
			want: &dynamodb.PutItemInput{
				TableName: aws.String("idem"),
				Item: map[string]types.AttributeValue{
					"id":                 s("order#O-9"),
					"status":             s("IN_PROGRESS"),
					"expiration":         n("1790003601"),
					"in_progress_expiry": n("1790000010456"),
					"lease":              s("LEASE1"),
					"validation":         s("abc123"),
				},
				ConditionExpression: aws.String(claimCondition),
				ExpressionAttributeNames: map[string]string{
					"#id": "id", "#expiration": "expiration", "#status": "status", "#in_progress_expiry": "in_progress_expiry", "#interrupted": "interrupted",
				},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":now": n("1790000000"), ":now_ms": n("1790000000123"), ":in_progress": s("IN_PROGRESS"),
				},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			},
		},
		{
			name: "NoFastPathCustomNames",
			options: []idempotency.DynamoDBOption{
				idempotency.WithFastPath(false),
				idempotency.WithAttributeNames(idempotency.AttributeNames{Key: "pk", Expiration: "ttl", InProgressExpiry: "lease_until"}),
			},
			want: &dynamodb.PutItemInput{
				TableName: aws.String("idem"),
				Item: map[string]types.AttributeValue{
					"pk":          s("order#O-9"),
					"status":      s("IN_PROGRESS"),
					"ttl":         n("1790003601"),
					"lease_until": n("1790000010456"),
					"lease":       s("LEASE1"),
					"validation":  s("abc123"),
				},
				ConditionExpression: aws.String(claimCondition),
				ExpressionAttributeNames: map[string]string{
					"#id": "pk", "#expiration": "ttl", "#status": "status", "#in_progress_expiry": "lease_until", "#interrupted": "interrupted",
				},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":now": n("1790000000"), ":now_ms": n("1790000000123"), ":in_progress": s("IN_PROGRESS"),
				},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := &recordingAPI{}
			store := idempotency.NewDynamoDBStore(api, "idem", tc.options...)
			if err := store.PutInProgress(t.Context(), record, now); err != nil {
				t.Fatalf("PutInProgress: %v", err)
			}
			assert.Equal(t, []any{tc.want}, api.requests, "requests mismatch")
		})
	}
}

// TestDynamoDBLeaseConditionedRequests asserts that Complete and Delete are conditioned
// on the lease, and Get reads consistently.
func TestDynamoDBLeaseConditionedRequests(t *testing.T) {
	t.Parallel()
	api := &recordingAPI{getItem: map[string]types.AttributeValue{"id": s("k"), "status": s("COMPLETED"), "lease": s("L"), "expiration": n("1790003600")}}
	store := idempotency.NewDynamoDBStore(api, "idem")
	done := idempotency.Record{Key: "k", Lease: "L", ExpiresAt: time.Unix(1_790_003_600, 0), Result: []byte("ok")}
	if err := store.Complete(t.Context(), done); err != nil {
		t.Fatal(err)
	}
	done.Result = nil
	if err := store.Complete(t.Context(), done); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(t.Context(), "k", "L"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"id": s("k")}
	want := []any{
		&dynamodb.UpdateItemInput{
			TableName:           aws.String("idem"),
			Key:                 key,
			UpdateExpression:    aws.String("SET #status = :completed, #expiration = :expiration, #data = :data REMOVE #in_progress_expiry, #deadline"),
			ConditionExpression: aws.String("#lease = :lease"),
			ExpressionAttributeNames: map[string]string{
				"#status": "status", "#expiration": "expiration", "#in_progress_expiry": "in_progress_expiry", "#deadline": "in_progress_deadline", "#lease": "lease", "#data": "data",
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":completed": s("COMPLETED"), ":expiration": n("1790003600"), ":lease": s("L"), ":data": &types.AttributeValueMemberB{Value: []byte("ok")},
			},
		},
		&dynamodb.UpdateItemInput{
			TableName:           aws.String("idem"),
			Key:                 key,
			UpdateExpression:    aws.String("SET #status = :completed, #expiration = :expiration REMOVE #in_progress_expiry, #deadline"),
			ConditionExpression: aws.String("#lease = :lease"),
			ExpressionAttributeNames: map[string]string{
				"#status": "status", "#expiration": "expiration", "#in_progress_expiry": "in_progress_expiry", "#deadline": "in_progress_deadline", "#lease": "lease",
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":completed": s("COMPLETED"), ":expiration": n("1790003600"), ":lease": s("L"),
			},
		},
		&dynamodb.DeleteItemInput{
			TableName:                 aws.String("idem"),
			Key:                       key,
			ConditionExpression:       aws.String("#lease = :lease"),
			ExpressionAttributeNames:  map[string]string{"#lease": "lease"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":lease": s("L")},
		},
		&dynamodb.GetItemInput{TableName: aws.String("idem"), Key: key, ConsistentRead: aws.Bool(true)},
	}
	assert.Equal(t, want, api.requests, "requests mismatch")
}

// TestDynamoDBErrorMapping checks how backend errors become store errors.
func TestDynamoDBErrorMapping(t *testing.T) {
	t.Parallel()
	conflict := &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	backend := errors.New("throttled")
	claim := idempotency.Record{Key: "k", Status: idempotency.StatusInProgress, ExpiresAt: start.Add(time.Hour), InProgressExpiresAt: start.Add(time.Minute), Lease: "L"}

	t.Run("ConflictWithOldItem", func(t *testing.T) {
		t.Parallel()
		withItem := &types.ConditionalCheckFailedException{Item: map[string]types.AttributeValue{
			"id": s("k"), "status": s("COMPLETED"), "expiration": n("1790003600"), "lease": s("OTHER"),
			"validation": s("h"), "data": &types.AttributeValueMemberB{Value: []byte("r")},
		}}
		store := idempotency.NewDynamoDBStore(&recordingAPI{putErr: withItem}, "idem")
		err := store.PutInProgress(t.Context(), claim, start)
		exists, ok := errors.AsType[*idempotency.AlreadyExistsError](err)
		if !ok || exists.Existing == nil {
			t.Fatalf("PutInProgress = %v; want *AlreadyExistsError with Existing", err)
		}
		want := idempotency.Record{Key: "k", Status: idempotency.StatusCompleted, ExpiresAt: time.Unix(1_790_003_600, 0), Lease: "OTHER", PayloadHash: "h", Result: []byte("r")}
		if diff := idempotencytest.RecordDiff(want, *exists.Existing); diff != "" {
			t.Errorf("Existing mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("ConflictWithoutOldItem", func(t *testing.T) {
		t.Parallel()
		store := idempotency.NewDynamoDBStore(&recordingAPI{putErr: conflict}, "idem")
		err := store.PutInProgress(t.Context(), claim, start)
		if exists, ok := errors.AsType[*idempotency.AlreadyExistsError](err); !ok || exists.Existing != nil {
			t.Fatalf("PutInProgress = %v; want *AlreadyExistsError without Existing", err)
		}
	})
	t.Run("MalformedOldItem", func(t *testing.T) {
		t.Parallel()
		malformed := &types.ConditionalCheckFailedException{Item: map[string]types.AttributeValue{"id": s("k"), "expiration": s("soon")}}
		store := idempotency.NewDynamoDBStore(&recordingAPI{putErr: malformed}, "idem")
		if _, ok := errors.AsType[*idempotency.StoreError](store.PutInProgress(t.Context(), claim, start)); !ok {
			t.Fatal("PutInProgress with a malformed old item: want *StoreError")
		}
	})
	t.Run("BackendFailures", func(t *testing.T) {
		t.Parallel()
		store := idempotency.NewDynamoDBStore(&recordingAPI{putErr: backend, updateErr: backend, deleteErr: backend}, "idem")
		for op, err := range map[string]error{
			"put":      store.PutInProgress(t.Context(), claim, start),
			"complete": store.Complete(t.Context(), claim),
			"delete":   store.Delete(t.Context(), "k", "L"),
		} {
			storeErr, ok := errors.AsType[*idempotency.StoreError](err)
			if !ok || storeErr.Op != op || storeErr.Key != "k" || !errors.Is(err, backend) {
				t.Errorf("%s: %v; want *StoreError{Op: %q, Key: \"k\"} wrapping the backend error", op, err, op)
			}
		}
	})
	t.Run("LeaseConditionFailures", func(t *testing.T) {
		t.Parallel()
		store := idempotency.NewDynamoDBStore(&recordingAPI{updateErr: conflict, deleteErr: conflict}, "idem")
		if err := store.Complete(t.Context(), claim); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Errorf("Complete: %v; want ErrLeaseLost", err)
		}
		if err := store.Delete(t.Context(), "k", "L"); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Errorf("Delete: %v; want ErrLeaseLost", err)
		}
	})
	t.Run("InvalidClaimSendsNothing", func(t *testing.T) {
		t.Parallel()
		api := &recordingAPI{}
		invalid := claim
		invalid.InProgressExpiresAt = time.Time{}
		if err := idempotency.NewDynamoDBStore(api, "idem").PutInProgress(t.Context(), invalid, start); !errors.Is(err, idempotency.ErrInvalidRecord) {
			t.Fatalf("PutInProgress without lease expiry: %v; want ErrInvalidRecord", err)
		}
		if len(api.requests) != 0 {
			t.Errorf("sent %d requests; want none", len(api.requests))
		}
	})
}

// TestMiddlewareRequestSequences asserts the full request sequence the middleware sends
// per case: a rejected duplicate sends only its claim (and a read without the fast path)
// and never an update or a delete.
func TestMiddlewareRequestSequences(t *testing.T) {
	t.Parallel()
	completedItem := map[string]types.AttributeValue{
		"id": s("m-1"), "status": s("COMPLETED"), "expiration": n("9999999999"), "lease": s("OTHER"),
	}
	inProgressItem := map[string]types.AttributeValue{
		"id": s("m-1"), "status": s("IN_PROGRESS"), "expiration": n("9999999999"),
		"in_progress_expiry": n("9999999999000"), "lease": s("OTHER"),
	}
	tests := []struct {
		name       string
		api        *recordingAPI
		fastPath   bool
		handlerErr error
		want       []string
		wantKind   sqsworker.OutcomeKind
	}{
		{"Success", &recordingAPI{}, true, nil, []string{"PutItem", "UpdateItem"}, sqsworker.OutcomeDelete},
		{"HandlerError", &recordingAPI{}, true, errors.New("boom"), []string{"PutItem", "DeleteItem"}, sqsworker.OutcomeRetry},
		{"CompletedFastPath", &recordingAPI{putErr: &types.ConditionalCheckFailedException{Item: completedItem}}, true, nil, []string{"PutItem"}, sqsworker.OutcomeDelete},
		{"InProgressFastPath", &recordingAPI{putErr: &types.ConditionalCheckFailedException{Item: inProgressItem}}, true, nil, []string{"PutItem"}, sqsworker.OutcomeDefer},
		{"CompletedReadPath", &recordingAPI{putErr: &types.ConditionalCheckFailedException{}, getItem: completedItem}, false, nil, []string{"PutItem", "GetItem"}, sqsworker.OutcomeDelete},
		{"InProgressReadPath", &recordingAPI{putErr: &types.ConditionalCheckFailedException{}, getItem: inProgressItem}, false, nil, []string{"PutItem", "GetItem"}, sqsworker.OutcomeDefer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := idempotency.NewDynamoDBStore(tc.api, "idem", idempotency.WithFastPath(tc.fastPath))
			handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
				return tc.handlerErr
			}), idempotency.Middleware(store, idempotency.Config{DuplicateWait: -1})) // no in-process wait: one decision
			err := handler.Handle(t.Context(), &sqsworker.Message{ID: "m-1", Body: "{}"})
			if got := sqsworker.Classify(err).Kind; got != tc.wantKind {
				t.Errorf("outcome = %s (%v); want %s", got, err, tc.wantKind)
			}
			var got []string
			for _, request := range tc.api.requests {
				switch request.(type) {
				case *dynamodb.PutItemInput:
					got = append(got, "PutItem")
				case *dynamodb.GetItemInput:
					got = append(got, "GetItem")
				case *dynamodb.UpdateItemInput:
					got = append(got, "UpdateItem")
				case *dynamodb.DeleteItemInput:
					got = append(got, "DeleteItem")
				}
			}
			assert.Equal(t, tc.want, got, "requests mismatch")
		})
	}
}

// TestDynamoDBStoreConformance runs the store suite on the DynamoDB emulator, with the
// ALL_OLD fast path on and off.
func TestDynamoDBStoreConformance(t *testing.T) {
	t.Parallel()
	for _, fastPath := range []bool{true, false} {
		name := map[bool]string{true: "FastPath", false: "ReadPath"}[fastPath]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			table := newEmulatorTable(t) // one table per mode; the suite's keys are unique
			idempotencytest.RunStoreTests(t, func(t *testing.T) idempotency.Store {
				return table.store(idempotency.WithFastPath(fastPath))
			})
		})
	}
}

// TestDynamoDBFastPathOnEmulator proves the emulator returns the old item with the
// ConditionalCheckFailedException (ReturnValuesOnConditionCheckFailure=ALL_OLD), so the
// fast path needs no read, and that disabling it omits the item.
func TestDynamoDBFastPathOnEmulator(t *testing.T) {
	t.Parallel()
	table := newEmulatorTable(t)
	first := idempotency.Record{
		Key: "fast-path", Status: idempotency.StatusInProgress, ExpiresAt: start.Add(time.Hour),
		InProgressExpiresAt: start.Add(10 * time.Second), Lease: "L1", PayloadHash: "h",
	}
	if err := table.store().PutInProgress(t.Context(), first, start); err != nil {
		t.Fatal(err)
	}
	second := first
	second.Lease = "L2"
	for _, fastPath := range []bool{true, false} {
		err := table.store(idempotency.WithFastPath(fastPath)).PutInProgress(t.Context(), second, start.Add(time.Second))
		exists, ok := errors.AsType[*idempotency.AlreadyExistsError](err)
		if !ok {
			t.Fatalf("fast path %t: %v; want *AlreadyExistsError", fastPath, err)
		}
		if fastPath {
			if exists.Existing == nil {
				t.Fatal("emulator did not return the old item for ReturnValuesOnConditionCheckFailure=ALL_OLD")
			}
			if diff := idempotencytest.RecordDiff(first, *exists.Existing); diff != "" {
				t.Errorf("Existing mismatch (-want +got):\n%s", diff)
			}
		} else if exists.Existing != nil {
			t.Errorf("fast path off: Existing = %+v; want nil", exists.Existing)
		}
	}
}
