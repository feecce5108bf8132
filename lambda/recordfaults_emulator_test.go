package lambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/esmtest"
	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/lambda/localesm"
)

// order is the job of the N25 tests.
type order struct {
	OrderID string `json:"orderId"`
	Fail    bool   `json:"fail"`
}

// n25Function is the handler stack of the N25 tests, served in-process behind the local
// event source mapping: the claim-check middleware (moto's S3), a ServeMux with the
// "order" job, and the idempotency middleware (moto's DynamoDB, through proxy) around the
// job. calls counts the job function's calls per order id.
type n25Function struct {
	batch  *lambda.BatchHandler
	url    string
	mu     sync.Mutex
	calls  map[string]int
	bucket string
}

func (f *n25Function) called(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

func startN25Function(t *testing.T, proxy *faultproxy.Proxy, options ...lambda.Option) *n25Function {
	t.Helper()
	cfg := testenv.AWSConfig(t)
	table := testenv.NewTable(t, testenv.DynamoDB(t))
	s3client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	f := &n25Function{calls: map[string]int{}, bucket: strings.ToLower(testenv.UniqueName(t))}
	if _, err := s3client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(f.bucket)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = s3client.DeleteBucket(context.Background(), &s3.DeleteBucketInput{Bucket: aws.String(f.bucket)})
	})
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(proxy.URL) }), table)
	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "order", func(_ context.Context, job order) error {
		f.mu.Lock()
		f.calls[job.OrderID]++
		f.mu.Unlock()
		if job.Fail {
			return errors.New("payment service answered 503")
		}
		return nil
	}, sqsworker.JobMiddleware(idempotency.Middleware(store, idempotency.Config{KeyFunc: idempotency.KeyFromMessageID})))
	resolver, err := claimcheck.NewResolver(s3client, claimcheck.ResolverConfig{Allow: []claimcheck.Location{{Bucket: f.bucket, KeyPrefix: "payloads/"}}})
	if err != nil {
		t.Fatal(err)
	}
	handler := sqsworker.Chain(mux, resolver.Middleware())
	f.batch = newBatch(t, handler, append([]lambda.Option{
		lambda.WithSQSClient(testenv.SQS(t)),
		lambda.WithBackoff(sqsworker.Backoff{Base: time.Second, Cap: time.Second, Jitter: sqsworker.JitterNone}),
		lambda.WithLogger(slog.New(slog.NewTextHandler(t.Output(), nil))),
	}, options...)...)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var event events.SQSEvent
		if err := json.NewDecoder(r.Body).Decode(&event); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// The function timeout, as Lambda sets it: 10 s from the invocation.
		ctx, cancel := context.WithTimeout(lambdacontext.NewContext(r.Context(), &lambdacontext.LambdaContext{AwsRequestID: "n25"}), 10*time.Second)
		defer cancel()
		response, err := f.batch.Handle(ctx, event)
		if err != nil {
			// As the Runtime API reports a function error (the RIE: 200 and this body).
			_ = json.NewEncoder(w).Encode(map[string]string{"errorMessage": err.Error(), "errorType": "BatchError"})
			return
		}
		_ = json.NewEncoder(w).Encode(response)
	}))
	t.Cleanup(server.Close)
	f.url = server.URL
	return f
}

// sendN25 sends the records of N25's first invocation and returns their message ids by
// name: r1 valid; r2 a truncated body; r3 job type "nope"; r4 a claim-check pointer to
// a missing key; r5 valid, its job fails with a retryable error; r6 valid.
func sendN25(t *testing.T, client *sqs.Client, queueURL, bucket string) map[string]string {
	t.Helper()
	jobType := func(name string) map[string]types.MessageAttributeValue {
		return map[string]types.MessageAttributeValue{sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String(name)}}
	}
	pointer := jobType("order")
	pointer[claimcheck.AttributePayloadSize] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String("40")}
	records := []struct {
		name, body string
		attributes map[string]types.MessageAttributeValue
	}{
		{"r1", `{"orderId":"r1"}`, jobType("order")},
		{"r2", `{"orderId":`, jobType("order")},
		{"r3", `{"orderId":"r3"}`, jobType("nope")},
		{"r4", claimcheck.Pointer{Bucket: bucket, Key: "payloads/missing"}.Body(), pointer},
		{"r5", `{"orderId":"r5","fail":true}`, jobType("order")},
		{"r6", `{"orderId":"r6"}`, jobType("order")},
	}
	ids := map[string]string{}
	for _, record := range records {
		output, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(queueURL), MessageBody: aws.String(record.body), MessageAttributes: record.attributes,
		})
		if err != nil {
			t.Fatal(err)
		}
		ids[record.name] = aws.ToString(output.MessageId)
	}
	return ids
}

// names returns the record names of message ids, sorted.
func names(ids map[string]string, messageIDs []string) []string {
	byID := map[string]string{}
	for name, id := range ids {
		byID[id] = name
	}
	var out []string
	for _, id := range messageIDs {
		out = append(out, byID[id])
	}
	slices.Sort(out)
	return out
}

// TestPerRecordProblemsAreTheRecordsOutcomes is CASES.md N25's first invocation,
// through the local event source mapping on the emulators, maxReceiveCount 3: a
// truncated body, an unknown job type and a claim-check pointer to a missing key are
// each their record's outcome, not the invocation's. The invocation returns no error;
// with the dead-letter send on, only r5 (a retryable error) is in batchItemFailures and
// r2, r3, r4 are in the dead-letter queue after one receive with their reasons; with it
// off, r2..r5 are in batchItemFailures and r2, r3, r4 reach the dead-letter queue after
// 3 receives (the redrive policy). Their job function never runs; r1 and r6 run once.
//
// A receive whose answer is lost (a reset connection on AWS; a cut-short answer from a
// loaded LocalStack, localstack/README.md) leaves its messages in flight for the
// visibility timeout, and that receive counts toward maxReceiveCount, as on AWS. The
// third case resets the first receive that takes messages: the records are first
// delivered at receive count 2, dead-lettered with that count, and r5 runs twice before
// RetriesExhausted. Every count is therefore taken from a record's first delivered
// receive, which also keeps the other cases exact when a run meets such a loss by itself
// (seen once in CI).
func TestPerRecordProblemsAreTheRecordsOutcomes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                  string
		send, loseFirstAnswer bool
	}{
		{name: "dead-letter send on", send: true},
		{name: "dead-letter send off"},
		{name: "dead-letter send on, first receive's answer lost", send: true, loseFirstAnswer: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 10 * time.Second, MaxReceiveCount: 3})
			fn := startN25Function(t, faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")), lambda.WithDisableDeadLetterSend(!c.send))
			ids := sendN25(t, client, queue.URL, fn.bucket)
			mappingClient := client
			if c.loseFirstAnswer {
				proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_SQS"))
				proxy.SetRules(faultproxy.Rule{Operations: []string{"ReceiveMessage"}, Fraction: 1, Times: 1, Reset: true, ResponseContains: `"Messages"`})
				mappingClient = sqs.NewFromConfig(testenv.AWSConfig(t), func(o *sqs.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
			}
			_, batches := esmtest.Run(t, mappingClient, localesm.Config{
				QueueURL: queue.URL, FunctionURLs: []string{fn.url}, BatchSize: 10, BatchingWindow: time.Second,
				ReportBatchItemFailures: true, MaximumConcurrency: 1,
			})
			dead := deadLetters(t, client, queue.DeadLetterQueueURL, 4) // r2, r3, r4, and r5 after its retries
			testenv.Eventually(t, 10*time.Second, "the first invocation recorded", func() bool { return len(batches()) > 0 })
			// Each record at its first delivery: its receive count, and whether the
			// invocation reported it failed.
			firstReceive, firstFailed := map[string]int{}, map[string]bool{}
			for _, batch := range batches() {
				if batch.Err != nil {
					t.Errorf("an invocation of %d records failed whole: %v", len(batch.Event.Records), batch.Err)
				}
				for _, record := range batch.Event.Records {
					name := names(ids, []string{record.MessageId})[0]
					if _, seen := firstReceive[name]; seen {
						continue
					}
					count, err := strconv.Atoi(record.Attributes["ApproximateReceiveCount"])
					if err != nil {
						t.Fatalf("%s: receive count %q: %v", name, record.Attributes["ApproximateReceiveCount"], err)
					}
					firstReceive[name], firstFailed[name] = count, slices.Contains(batch.Failed, record.MessageId)
				}
			}
			// At most one lost answer by itself, and the forced one: the records it took
			// were first delivered at receive count 2.
			highest, lost := 2, false
			if c.loseFirstAnswer {
				highest = 3
			}
			var failed []string
			for name, count := range firstReceive {
				if count > 1 {
					t.Logf("%s first delivered at receive count %d: an earlier receive's answer was lost", name, count)
					lost = true
				}
				if count < 1 || count > highest {
					t.Errorf("%s first delivered at receive count %d; want 1 to %d", name, count, highest)
				}
				if firstFailed[name] {
					failed = append(failed, name)
				}
			}
			if c.loseFirstAnswer && !lost {
				t.Errorf("every record first delivered at receive count 1 (%v): the reset answer took none", firstReceive)
			}
			slices.Sort(failed)
			wantFailed := []string{"r5"}
			if !c.send {
				wantFailed = []string{"r2", "r3", "r4", "r5"}
			}
			if len(firstReceive) != 6 || !slices.Equal(failed, wantFailed) {
				t.Errorf("first deliveries: %v, failed %v; want all six, failed %v", firstReceive, failed, wantFailed)
			}
			reasons := map[string]string{}
			for _, message := range dead {
				attributes := failureAttributes(message)
				id := attributes[sqsworker.AttributeFailureMessageID]
				if id == "" { // moved by the redrive policy: the original message
					id = aws.ToString(message.MessageId)
				}
				reasons[names(ids, []string{id})[0]] = attributes[sqsworker.AttributeFailureReason] + " " + attributes[sqsworker.AttributeFailureReceiveCount]
			}
			want := map[string]string{
				"r2": "MalformedBody " + strconv.Itoa(firstReceive["r2"]), "r3": "UnknownJobType " + strconv.Itoa(firstReceive["r3"]),
				"r4": claimcheck.ReasonPayloadNotFound + " " + strconv.Itoa(firstReceive["r4"]),
				"r5": sqsworker.ReasonRetriesExhausted + " 3",
			}
			if !c.send {
				want = map[string]string{"r2": " ", "r3": " ", "r4": " ", "r5": " "} // moved by SQS, without attributes
			}
			if !maps.Equal(reasons, want) {
				t.Errorf("dead letters (reason, failure receive count) %v, want %v", reasons, want)
			}
			// r5's dead letter is sent before its last invocation returns: wait for that
			// invocation to end before counting (seen once in CI: 3 dead-lettered, 1 in flight).
			testenv.Eventually(t, 10*time.Second, "the last invocation finished", func() bool { return fn.batch.Stats().InFlight == 0 })
			// r5 runs at each receive from its first delivered one to maxReceiveCount (3).
			for name, calls := range map[string]int{"r1": 1, "r2": 0, "r3": 0, "r4": 0, "r5": 3 - firstReceive["r5"] + 1, "r6": 1} {
				if got := fn.called(name); got != calls {
					t.Errorf("%s: job function called %d times, want %d", name, got, calls)
				}
			}
			wantDeleted, wantDeadLettered := int64(2), int64(0) // r1 and r6
			if c.send {
				wantDeleted, wantDeadLettered = 6, 4 // and the dead-lettered r2..r5, reported as successes
			}
			if stats := fn.batch.Stats(); stats.Deleted != wantDeleted || stats.DeadLettered != wantDeadLettered {
				t.Errorf("stats %+v, want %d deleted and %d dead-lettered", stats, wantDeleted, wantDeadLettered)
			}
		})
	}
}

// TestInfrastructureFaultFailsTheInvocation is CASES.md N25's second invocation: the
// idempotency table answers AccessDeniedException to every record (the fault proxy in
// front of moto). After the first 2 records fail with it the adapter starts no more: the
// other 4 never reach the table, and the invocation fails as a whole with an error that
// names the fault, so the event source mapping deletes nothing. The 2 failed records get
// their backoff; the 4 others keep their visibility.
func TestInfrastructureFaultFailsTheInvocation(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 30 * time.Second, MaxReceiveCount: 5})
	proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"))
	proxy.SetRules(faultproxy.Rule{Operations: []string{"PutItem"}, Fraction: 1, Status: 400, Code: "AccessDeniedException",
		Message: "User: arn:aws:sts::000000000000:assumed-role/fn is not authorized to perform: dynamodb:PutItem"})
	fn := startN25Function(t, proxy, lambda.WithConcurrency(1))
	var bodies []string
	for _, id := range []string{"o1", "o2", "o3", "o4", "o5", "o6"} {
		bodies = append(bodies, `{"orderId":"`+id+`"}`)
	}
	for _, body := range bodies {
		if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(queue.URL), MessageBody: aws.String(body),
			MessageAttributes: map[string]types.MessageAttributeValue{sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String("order")}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	_, batches := esmtest.Run(t, client, localesm.Config{
		QueueURL: queue.URL, FunctionURLs: []string{fn.url}, BatchSize: 10, BatchingWindow: time.Second,
		ReportBatchItemFailures: true, MaximumConcurrency: 1,
	})
	testenv.Eventually(t, 30*time.Second, "the first invocation", func() bool { return len(batches()) > 0 })
	first := batches()[0]
	if len(first.Event.Records) != 6 || first.Err == nil || len(first.Deleted) != 0 {
		t.Fatalf("first invocation: %d records, error %v, deleted %v; want six records, an invocation error and no deletes", len(first.Event.Records), first.Err, first.Deleted)
	}
	for _, want := range []string{"2 records in a row failed with the same infrastructure fault", "DynamoDB PutItem AccessDeniedException", "idempotency: store put"} {
		if !strings.Contains(first.Err.Error(), want) {
			t.Errorf("invocation error %q does not say %q", first.Err, want)
		}
	}
	puts := 0
	for _, call := range proxy.Calls() {
		if call.Operation == "PutItem" && !call.At.After(first.End) {
			puts++
		}
	}
	if puts != 2 {
		t.Errorf("%d PutItem calls during the invocation, want 2 (the other 4 records not touched)", puts)
	}
	for _, id := range []string{"o1", "o2", "o3", "o4", "o5", "o6"} {
		if calls := fn.called(id); calls != 0 {
			t.Errorf("job %s ran %d times behind the failing idempotency store", id, calls)
		}
	}
	if stats := fn.batch.Stats(); stats.Failed != 2 || stats.Released != 4 || stats.Deleted != 0 {
		t.Errorf("stats %+v, want 2 failed, 4 not started, none deleted", stats)
	}
}
