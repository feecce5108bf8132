package sqsworker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/encrypt"
	"github.com/sqsworker/sqsworker/fleetlimit"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// Job is the job of the README's and the package comment's examples.
type Job struct {
	JobID string `json:"jobId"`
}

// Run does the job.
func (j Job) Run(ctx context.Context) error { return ctx.Err() }

// The package comment's minimal container worker. Run returns nil after a graceful
// drain, so the process exits 0 (log.Fatal(nil) would print "<nil>" and exit 1).
func Example() {
	var sqsClient *sqs.Client // sqs.NewFromConfig(awsConfig)
	url := os.Getenv("QUEUE_URL")
	run := func() {
		h := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
			var job Job
			if err := json.Unmarshal([]byte(m.Body), &job); err != nil {
				return sqsworker.Permanent("MalformedBody", err)
			}
			return job.Run(ctx)
		})
		srv, err := poller.New(sqsClient, poller.Config{QueueURL: url}, h)
		if err != nil {
			log.Fatal(err)
		}
		if err := srv.Run(context.Background()); err != nil { // nil after a graceful drain
			log.Fatal(err)
		}
	}
	_ = run
}

// The README's container worker, with idempotency.
func Example_containerWorker() {
	ctx := context.Background()
	var cfg aws.Config // config.LoadDefaultConfig(ctx)
	url := os.Getenv("QUEUE_URL")
	run := func() {
		var handler sqsworker.Handler = sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
			var job Job
			if err := json.Unmarshal([]byte(m.Body), &job); err != nil {
				return sqsworker.Permanent("MalformedBody", err) // to the DLQ at once
			}
			return job.Run(ctx) // ctx ends at the per-message hard timeout or the drain deadline
		})
		store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), "jobs-idempotency")
		handler = sqsworker.Chain(handler, idempotency.Middleware(store, idempotency.Config{
			KeyFunc: idempotency.KeyFromJSONField("jobId"),
		}))
		server, err := poller.New(sqs.NewFromConfig(cfg), poller.Config{QueueURL: url}, handler)
		if err != nil {
			log.Fatal(err) // every invalid setting, named, in one error
		}
		if err := server.Run(ctx); err != nil { // nil after a graceful drain on SIGTERM: exit 0
			log.Fatal(err)
		}
	}
	_ = run
	_ = config.LoadDefaultConfig
}

// handler is the handler of the README's Lambda function.
var handler sqsworker.Handler = sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil })

// main is the README's Lambda function (in a package main of its own).
func main() {
	batch, err := lambda.NewBatchHandler(handler)
	if err != nil {
		log.Fatal(err) // a bad option: the function's init fails, naming it
	}
	awslambda.Start(batch.Handle) // github.com/aws/aws-lambda-go/lambda
}

// The README's Lambda function: main above, started by the Lambda runtime.
func Example_lambdaFunction() {
	_ = main
}

// The README's observer: a Counter and a log of dead letters, on the poller (or Lambda).
func Example_observer() {
	sqsClient := sqs.New(sqs.Options{Region: "us-east-1"}) // nothing is called before Start
	url := "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
	handler := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil })
	counter := &sqsworker.Counter{}
	deadLetters := sqsworker.ObserverFunc(func(ctx context.Context, ev sqsworker.Event) {
		if ev.Kind == sqsworker.EventDeadLettered {
			slog.WarnContext(ctx, "dead-lettered", "message_id", ev.Message.ID, "reason", ev.Outcome.Reason)
		}
	})
	observer := sqsworker.Observers(counter, deadLetters)
	server, err := poller.New(sqsClient, poller.Config{QueueURL: url, Observer: observer}, handler)
	// or, on Lambda: lambda.NewBatchHandler(handler, lambda.WithObserver(observer))
	_, _ = lambda.NewBatchHandler(handler, lambda.WithObserver(observer))
	fmt.Println(server != nil, err, counter.Stats().Received)
	// Output: true <nil> 0
}

type Charge struct {
	OrderID string `json:"orderId"`
}

// Every middleware in one chain, outermost first, for a worker that uses them all.
func Example_middlewareOrder() {
	var (
		mux       *sqsworker.ServeMux        // the job types
		sender    *producer.Producer         // producer.New: it re-sends delayed and waiting jobs
		limits    *fleetlimit.Limiter        // fleetlimit.New
		b         *batches.Batches           // batches.New
		records   *jobs.Store                // jobs.NewStore
		store     *idempotency.DynamoDBStore // idempotency.NewDynamoDBStore
		resolver  *claimcheck.Resolver       // claimcheck.NewResolver
		decrypter *encrypt.Decrypter         // encrypt.NewDecrypter
	)
	handler := sqsworker.Chain(mux,
		// A job not due yet is re-sent as it was received: nothing below runs for it.
		sqsworker.DelayMiddleware(sender),
		// A job waiting for a permit or a rate start is deferred or re-sent as it was
		// received, before anything records or counts it.
		limits.Middleware(),
		// A delay or limit hop returns nil: seen from here it would be a success.
		b.Middleware(batches.MiddlewareConfig{MaxReceiveCount: 5}),
		// Inside batches: a cancelled job leaves here as Cancelled, which ends it.
		records.Middleware(jobs.MiddlewareConfig{MaxReceiveCount: 5}),
		// Keyed by the job id: a copy of a handled job is answered before its payload is
		// fetched; kept as long as the batches, so a success is counted with it.
		idempotency.Middleware(store, idempotency.Config{TTL: batches.DefaultRetention}),
		// Fetches a claim-check payload from S3 (ciphertext, when encrypted).
		resolver.Middleware(),
		// Decrypts what the resolver fetched.
		decrypter.Middleware(),
	)
	_ = handler // poller.New(sqsClient, poller.Config{QueueURL: queueURL}, handler)
}

// The README's attempts per job type: at most 4 attempts of charge-card, retried after
// 10 s, 1 min and then 10 min; the fourth failure goes to the dead-letter queue with
// reason RetriesExhausted. The queue's maxReceiveCount must be above 4 (the poller
// refuses to start otherwise).
func ExampleJobMaxAttempts() {
	chargeCard := func(ctx context.Context, job Charge) error { return fmt.Errorf("card declined for %s", job.OrderID) }
	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "charge-card", chargeCard,
		sqsworker.JobMaxAttempts(4), // then the dead-letter queue, reason RetriesExhausted
		sqsworker.JobRetryDelays(10*time.Second, time.Minute, 10*time.Minute))
	fmt.Println(mux.MaxAttempts())

	message := &sqsworker.Message{Body: `{"orderId":"A-7"}`, ReceiveCount: 2, MessageAttributes: map[string]sqsworker.MessageAttribute{
		sqsworker.AttributeJobType: {DataType: "String", StringValue: "charge-card"},
	}}
	err := mux.Handle(context.Background(), message)
	limit, _ := sqsworker.AttemptLimit(err)
	fmt.Println(sqsworker.Classify(err).Delay, limit)
	// Output:
	// map[charge-card:4]
	// 1m0s 4
}

// TestSnippetsAreCompiledExamples keeps every Go snippet of README.md and of the package
// comments in a compiled example_test.go: each must appear there, line for line
// (indentation and blank lines aside), so a snippet cannot go stale.
func TestSnippetsAreCompiledExamples(t *testing.T) {
	examples := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, entry os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() && path != "." && (strings.HasPrefix(entry.Name(), ".") || entry.Name() == "bench" || entry.Name() == "soak") {
			return filepath.SkipDir // other modules
		}
		if entry.Name() == "example_test.go" {
			text, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			examples[path] = normalize(string(text))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var snippets []snippet
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for i, block := range strings.Split(string(readme), "```go\n")[1:] {
		code, _, _ := strings.Cut(block, "```")
		snippets = append(snippets, snippet{fmt.Sprintf("README.md Go block %d", i+1), code})
	}
	for _, file := range []string{"doc.go", "poller/doc.go", "lambda/doc.go", "idempotency/doc.go", "redrive/doc.go", "worker/worker.go", "producer/doc.go"} {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		snippets = append(snippets, packageCommentCode(file, string(text))...)
	}
	if len(snippets) < 8 {
		t.Fatalf("found only %d snippets; the extraction is broken", len(snippets))
	}
	for _, s := range snippets {
		want := normalize(s.code)
		found := false
		for _, lines := range examples {
			if containsRun(lines, want) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s is in no example_test.go (copy it into an Example there, or make the text match):\n%s", s.where, s.code)
		}
	}
}

type snippet struct{ where, code string }

// packageCommentCode returns the code blocks (tab-indented lines) of a file's package
// comment that parse as Go: tables of variables or statuses are not code.
func packageCommentCode(file, text string) []snippet {
	comment, _, _ := strings.Cut(text, "\npackage ")
	var blocks []snippet
	var current []string
	flush := func() {
		code := strings.Join(current, "\n")
		current = nil
		if strings.TrimSpace(code) != "" && parsesAsGo(code) {
			blocks = append(blocks, snippet{fmt.Sprintf("%s package comment block %d", file, len(blocks)+1), code})
		}
	}
	for line := range strings.SplitSeq(comment, "\n") {
		if code, ok := strings.CutPrefix(line, "//\t"); ok {
			current = append(current, code)
			continue
		}
		if line == "//" && len(current) > 0 {
			current = append(current, "")
			continue
		}
		flush()
	}
	flush()
	return blocks
}

func parsesAsGo(code string) bool {
	fset := token.NewFileSet()
	if _, err := parser.ParseFile(fset, "", "package p\n"+code, 0); err == nil {
		return true
	}
	_, err := parser.ParseFile(fset, "", "package p\nfunc _() {\n"+code+"\n}", 0)
	return err == nil
}

// normalize returns the non-empty lines of text, each trimmed of surrounding space.
func normalize(text string) []string {
	var lines []string
	for line := range strings.SplitSeq(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// containsRun reports whether want appears in lines as consecutive lines.
func containsRun(lines, want []string) bool {
	for i := 0; i+len(want) <= len(lines); i++ {
		match := true
		for j := range want {
			if lines[i+j] != want[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return len(want) == 0
}
