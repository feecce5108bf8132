package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/examples/webhook/receiver"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/resourcesfile"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/provision"
	"github.com/sqsworker/sqsworker/redrive"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// options sets the size and timing of a demo run. defaultOptions is what `make demo` runs.
type options struct {
	Messages   int // messages sent, duplicates and malformed ones included
	Duplicates int // extra sends of an existing delivery (same body)
	Malformed  int // bodies that are not valid delivery requests
	Gone       int // deliveries to /gone/ endpoints (410)

	FailureRate            float64 // share of receiver requests answered 503
	MaxFailuresPerDelivery int     // cap on 503s per delivery id (below maxReceiveCount)
	Seed                   uint64

	// Host runs the worker: hostPoller ("" too) or hostLambda.
	Host            string
	DeliveryTimeout time.Duration // 0: the worker's default

	// The poller host: Workers processes.
	Workers        int
	Concurrency    int
	HandlerTimeout time.Duration // also the idempotency lease; below the visibility timeout
	DrainTimeout   time.Duration

	// The Lambda host: Functions execution environments (the mapping's maximum
	// concurrency), BatchSize records per invocation, all handled at once.
	Functions int
	BatchSize int
	// FunctionTimeout is the function timeout, whole seconds. The idempotency lease ends
	// with the invocation's deadline, so it must stay below the visibility timeout.
	FunctionTimeout time.Duration

	// Resources are provisioned (and reset); nil reads localstack/resources.json. The
	// first queue and the first table are the demo's.
	Resources *provision.Resources
	// KillAfter is the share of the good deliveries delivered before a unit of the host
	// (a worker, an execution environment) is killed.
	KillAfter float64
	// Timeout bounds the wait for every delivery to settle.
	Timeout time.Duration
	// LogDir receives the worker binary and logs; "" makes a temporary directory.
	LogDir string

	// Store is where the orders service keeps orders and their outbox: storeDynamoDB
	// ("" too) or storePostgres (at PostgresURL).
	Store       string
	PostgresURL string
	// RolledBack orders are written with their webhook job in transactions rolled back
	// on purpose; none of their jobs may ever be delivered (phantom).
	RolledBack int
	// RelayKillAfter is the share of the committed orders published before relay 1 is
	// SIGKILLed (relay 2 runs beside it on PostgreSQL and replaces it on DynamoDB).
	RelayKillAfter float64
}

func defaultOptions() options {
	return options{
		Messages:               500,
		Duplicates:             40,
		Malformed:              10,
		Gone:                   20,
		FailureRate:            0.15,
		MaxFailuresPerDelivery: 2,
		Seed:                   20251129,
		Host:                   hostPoller,
		Workers:                2,
		Concurrency:            8,
		HandlerTimeout:         15 * time.Second,
		DrainTimeout:           10 * time.Second,
		Functions:              2,
		BatchSize:              10,
		FunctionTimeout:        10 * time.Second,
		KillAfter:              1.0 / 3,
		Timeout:                4 * time.Minute,
		Store:                  storeDynamoDB,
		PostgresURL:            os.Getenv("SQSWORKER_POSTGRES_URL"),
		RolledBack:             25,
		RelayKillAfter:         0.3,
	}
}

// summary is the demo's result; String is the summary line.
type summary struct {
	Orders, RolledBack, OutboxPublished                                                int
	Sent, Unique, Delivered, DuplicatesSuppressed, DeadLettered, Lost, DoubleDelivered int
	Phantom                                                                            int
}

func (s summary) String() string {
	return fmt.Sprintf("demo: orders=%d rolled_back=%d outbox_published=%d sent=%d unique=%d delivered=%d duplicates_suppressed=%d dead_lettered=%d lost=%d double_delivered=%d phantom=%d",
		s.Orders, s.RolledBack, s.OutboxPublished, s.Sent, s.Unique, s.Delivered, s.DuplicatesSuppressed, s.DeadLettered, s.Lost, s.DoubleDelivered, s.Phantom)
}

// kind is what a unique delivery is expected to end as.
type kind int

const (
	kindGood      kind = iota // delivered
	kindGone                  // 410 → dead-letter queue
	kindMalformed             // MalformedBody → dead-letter queue
)

// planned is one message to send. key identifies the unique delivery: the delivery id,
// or "malformed-N" for a malformed body.
type planned struct {
	key  string
	kind kind
	body string
}

// plan is what the demo sends.
type plan struct {
	messages    []planned         // in send order, duplicates included
	kinds       map[string]kind   // unique key → kind
	malformed   map[string]string // malformed body → key
	duplicates  int
	goodUnique  int
	expectedDLQ int
	rolledBack  map[string]bool // keys of the deliveries of rolled-back orders
}

// makePlan builds the messages: good and gone deliveries and malformed bodies, shuffled,
// then duplicate sends of good deliveries, half right after the original (so both copies
// are likely handled at the same time) and half later.
func makePlan(o options, baseURL string) (*plan, error) {
	good := o.Messages - o.Duplicates - o.Malformed - o.Gone
	if good < 1 || o.Duplicates > good || o.Duplicates < 0 || o.Malformed < 0 || o.Gone < 0 {
		return nil, fmt.Errorf("demo: %d messages cannot hold %d duplicates, %d malformed and %d gone with at least as many good deliveries as duplicates",
			o.Messages, o.Duplicates, o.Malformed, o.Gone)
	}
	random := rand.New(rand.NewPCG(o.Seed, 1))
	p := &plan{kinds: map[string]kind{}, malformed: map[string]string{}, duplicates: o.Duplicates, goodUnique: good, expectedDLQ: o.Gone + o.Malformed}
	body := func(id, path string, sequence int) string {
		encoded, _ := json.Marshal(map[string]any{
			"deliveryId": id,
			"url":        baseURL + path,
			"payload":    map[string]any{"event": "invoice.paid", "sequence": sequence, "amount": 100 + sequence},
		})
		return string(encoded)
	}
	var goodIDs []string
	for i := range good {
		id := fmt.Sprintf("d-%04d", i+1)
		goodIDs = append(goodIDs, id)
		p.kinds[id] = kindGood
		p.messages = append(p.messages, planned{id, kindGood, body(id, fmt.Sprintf("/hooks/customer-%d", i%7), i)})
	}
	for i := range o.Gone {
		id := fmt.Sprintf("g-%04d", i+1)
		p.kinds[id] = kindGone
		p.messages = append(p.messages, planned{id, kindGone, body(id, fmt.Sprintf("%scustomer-%d", receiver.GonePrefix, i), i)})
	}
	for i := range o.Malformed {
		key := fmt.Sprintf("malformed-%02d", i+1)
		text := malformedBody(i, baseURL)
		p.kinds[key] = kindMalformed
		p.malformed[text] = key
		p.messages = append(p.messages, planned{key, kindMalformed, text})
	}
	random.Shuffle(len(p.messages), func(i, j int) { p.messages[i], p.messages[j] = p.messages[j], p.messages[i] })

	position := func(key string) int {
		for i, m := range p.messages {
			if m.key == key {
				return i
			}
		}
		return -1
	}
	random.Shuffle(len(goodIDs), func(i, j int) { goodIDs[i], goodIDs[j] = goodIDs[j], goodIDs[i] })
	duplicated := goodIDs[:o.Duplicates]
	later, adjacent := duplicated[:o.Duplicates/2], duplicated[o.Duplicates/2:]
	for _, id := range later {
		at := position(id)
		insert := at + 1 + random.IntN(len(p.messages)-at)
		p.messages = slices.Insert(p.messages, insert, p.messages[at])
	}
	// Last, so no later insertion separates a pair.
	for _, id := range adjacent {
		at := position(id)
		p.messages = slices.Insert(p.messages, at+1, p.messages[at])
	}
	return p, nil
}

// malformedBody returns the i-th malformed body; each is distinct.
func malformedBody(i int, baseURL string) string {
	switch i % 10 {
	case 0:
		return fmt.Sprintf("not json #%d", i)
	case 1:
		return fmt.Sprintf(`{"deliveryId":"malformed-%d","url":`, i)
	case 2:
		return fmt.Sprintf(`{"url":"%s/hooks/m%d","payload":{}}`, baseURL, i)
	case 3:
		return fmt.Sprintf(`{"deliveryId":"malformed-%d","payload":{}}`, i)
	case 4:
		return fmt.Sprintf(`{"deliveryId":"malformed-%d","url":"ftp://127.0.0.1/m%d"}`, i, i)
	case 5:
		return fmt.Sprintf(`{"deliveryId":"malformed-%d","url":"/relative/m%d"}`, i, i)
	case 6:
		return fmt.Sprintf(`["malformed",%d]`, i)
	case 7:
		return fmt.Sprintf(`{"deliveryId":%d,"url":"%s/hooks/m%d"}`, 900000+i, baseURL, i)
	case 8:
		return fmt.Sprintf(`{"deliveryId":"","url":"%s/hooks/m%d","n":%d}`, baseURL, i, i)
	default:
		return fmt.Sprintf(`{"deliveryId":"malformed-%d","url":"%s/hooks/m%d"} trailing`, i, baseURL, i)
	}
}

// report is what a run found: the summary and the dead-letter queue's failure reasons.
type report struct {
	summary
	// DeadLetterReasons counts the dead-letter messages by failure-reason attribute.
	DeadLetterReasons map[string]int
	// DeadLetters lists, per unique delivery in the dead-letter queue, the failure reason
	// of each of its messages (more than one when it was dead-lettered again).
	DeadLetters map[string][]string
	// Crashed lists the keys of the messages the crashed unit held in flight, when the
	// host can tell (the Lambda host: its invocation's records).
	Crashed []string
	// Resent lists the keys dead-lettered twice as one outbox entry: the killed relay's
	// message and the next relay's resend of the same entry.
	Resent []string
}

// demoRun is one run of the demo, phase by phase: prepare, provision, send, start the
// host, kill one of its units, wait for the queues to settle, count.
type demoRun struct {
	o        options
	started  time.Time
	printf   func(format string, args ...any)
	cleanups []func()

	root       string
	resources  *provision.Resources
	h          host
	logDir     string
	sqsClient  *sqs.Client
	queue      provision.QueueResult
	table      provision.TableResult
	endpoint   *receiver.Receiver
	plan       *plan
	keys       map[string]string // message id -> delivery key
	waitCtx    context.Context
	crashed    crash
	dead       deadLetters
	crashedIDs []string
	orders     orderCounts
}

func (d *demoRun) close() {
	for i := len(d.cleanups) - 1; i >= 0; i-- {
		d.cleanups[i]()
	}
}

// run is the demo: provision, send, run the host, kill one of its units, wait, count.
// It prints progress lines to out (not the summary line) and returns what it counted.
// err is set when the run could not be completed or the host did not stop cleanly; the
// report is zero when the run failed before counting.
func run(ctx context.Context, o options, out io.Writer) (report, error) {
	d := &demoRun{o: o, started: time.Now()}
	d.printf = func(format string, args ...any) { fmt.Fprintf(out, "demo: "+format+"\n", args...) }
	defer d.close()
	for _, phase := range []func(context.Context) error{d.prepare, d.provision, d.placeOrders, d.startHost, d.killOne, d.waitSettled} {
		if err := phase(ctx); err != nil {
			return report{}, err
		}
	}
	// Graceful stop of what is left.
	stopErr := d.h.stop()
	r, err := d.count()
	if err != nil {
		return report{}, err
	}
	return r, stopErr
}

// prepare checks the environment and the options and builds what the host runs: a build
// error stops the demo before it touches SQS.
func (d *demoRun) prepare(ctx context.Context) error {
	o := d.o
	for _, name := range []string{"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB"} {
		if os.Getenv(name) == "" {
			// The demo purges its queues and empties its table: never against an account
			// the default chain happens to point at.
			return fmt.Errorf("demo: %s is not set; run `make demo`, or eval \"$(localstack/env)\" first", name)
		}
	}
	var err error
	if d.root, err = repositoryRoot("."); err != nil {
		return err
	}
	d.resources = o.Resources
	if d.resources == nil {
		if d.resources, err = provision.LoadFile(filepath.Join(d.root, resourcesfile.Path)); err != nil {
			return err
		}
	}
	if len(d.resources.Queues) == 0 || d.resources.Queues[0].DeadLetterQueue == nil || len(d.resources.Tables) == 0 {
		return errors.New("demo: the resources need a queue with a dead-letter queue and a table")
	}
	if d.h, err = newHost(o); err != nil {
		return err
	}
	d.cleanups = append(d.cleanups, d.h.close)
	if o.MaxFailuresPerDelivery >= d.resources.Queues[0].MaxReceiveCount {
		return fmt.Errorf("demo: MaxFailuresPerDelivery %d must stay below maxReceiveCount %d, or 503s alone could dead-letter a delivery", o.MaxFailuresPerDelivery, d.resources.Queues[0].MaxReceiveCount)
	}
	visibility := time.Duration(d.resources.Queues[0].VisibilityTimeoutSeconds) * time.Second
	if o.Host == hostLambda && o.FunctionTimeout >= visibility {
		return fmt.Errorf("demo: function timeout %s must stay below the visibility timeout %s: the idempotency lease ends with the invocation", o.FunctionTimeout, visibility)
	}
	d.logDir = o.LogDir
	if d.logDir == "" {
		if d.logDir, err = os.MkdirTemp("", "sqsworker-demo-"); err != nil {
			return err
		}
	}
	return d.h.build(ctx, d.root, d.logDir)
}

// repositoryRoot returns the sqsworker checkout's root at or above dir: the nearest module
// root holding localstack/resources.json. The demo's own module (examples/webhook) is
// nested in it, so from its tests the nearest go.mod is not the root.
func repositoryRoot(dir string) (string, error) {
	for {
		root, err := resourcesfile.ModuleRoot(dir)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(filepath.Join(root, resourcesfile.Path)); err == nil {
			return root, nil
		}
		if dir = filepath.Dir(root); dir == root {
			return "", fmt.Errorf("demo: no module root with %s at or above %s", resourcesfile.Path, root)
		}
	}
}

// provision creates and empties the queues and the table, and starts the receiver.
func (d *demoRun) provision(ctx context.Context) error {
	awsConfig, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("demo: loading the AWS configuration: %w", err)
	}
	var dynamoClient *dynamodb.Client
	d.sqsClient, dynamoClient = sqs.NewFromConfig(awsConfig), dynamodb.NewFromConfig(awsConfig)
	provisioned, err := provision.Apply(ctx, d.sqsClient, dynamoClient, d.resources, provision.Options{Reset: true})
	if err != nil {
		return err
	}
	d.queue, d.table = provisioned.Queues[0], provisioned.Tables[0]
	queueSpec := d.resources.Queues[0]
	d.printf("provisioned and emptied %s (visibility %ds, maxReceiveCount %d), %s and table %s",
		d.queue.Name, queueSpec.VisibilityTimeoutSeconds, queueSpec.MaxReceiveCount, queueSpec.DeadLetterQueue.Name, d.table.Name)
	if d.table.TTLWarning != "" {
		d.printf("note: %s", d.table.TTLWarning)
	}
	o := d.o
	if d.endpoint, err = receiver.Start(receiver.Config{FailureRate: o.FailureRate, Seed: o.Seed, MaxFailuresPerDelivery: o.MaxFailuresPerDelivery}); err != nil {
		return err
	}
	d.cleanups = append(d.cleanups, func() { d.endpoint.Close() })
	d.printf("receiver on %s: %.0f%% of requests answer 503 (at most %d per delivery), %s* answers 410",
		d.endpoint.URL(), o.FailureRate*100, o.MaxFailuresPerDelivery, receiver.GonePrefix)
	return nil
}

// startHost starts the host; every later wait ends at the run's deadline.
func (d *demoRun) startHost(ctx context.Context) error {
	waitCtx, cancel := context.WithDeadline(ctx, time.Now().Add(d.o.Timeout))
	d.cleanups = append(d.cleanups, cancel)
	d.waitCtx = waitCtx
	return d.h.start(waitCtx, setup{options: d.o, queueURL: d.queue.URL, table: d.table.Name, logDir: d.logDir, sqs: d.sqsClient, printf: d.printf})
}

// killOne kills one unit once a share of the good deliveries is delivered, at a moment
// when none of its handlers is between a 2xx response and its COMPLETED write.
func (d *demoRun) killOne(context.Context) error {
	threshold := max(1, int(float64(d.plan.goodUnique)*d.o.KillAfter))
	if err := poll(d.waitCtx, 20*time.Millisecond, func() (bool, error) {
		_, delivered := d.endpoint.Totals()
		return delivered >= threshold, d.h.check()
	}); err != nil {
		return fmt.Errorf("demo: waiting for %d deliveries before the kill: %w", threshold, err)
	}
	d.endpoint.Pause()
	if err := poll(d.waitCtx, 20*time.Millisecond, func() (bool, error) {
		return time.Since(d.endpoint.LastResponseAt()) >= time.Second, nil
	}); err != nil {
		d.endpoint.Resume()
		return err
	}
	_, deliveredAtKill := d.endpoint.Totals()
	held := d.endpoint.Held()
	var err error
	d.crashed, err = d.h.crash(d.waitCtx)
	d.endpoint.Resume()
	if err != nil {
		return err
	}
	d.printf("%s at %s, after %d of %d good deliveries, with the receiver holding %d requests of both %ss",
		d.crashed.description, since(d.started), deliveredAtKill, d.plan.goodUnique, held, d.h.unit())
	return nil
}

// waitSettled waits until the source queue is drained (the killed unit's messages
// reappear after the visibility timeout), then reads the dead-letter queue.
func (d *demoRun) waitSettled(ctx context.Context) error {
	killedAt := time.Now()
	settledPolls := 0
	err := poll(d.waitCtx, 250*time.Millisecond, func() (bool, error) {
		if err := d.h.check(); err != nil {
			return false, err
		}
		source, err := sqsinfo.QueueDepth(d.waitCtx, d.sqsClient, d.queue.URL)
		if err != nil {
			return false, fmt.Errorf("demo: reading the counts of %s: %w", d.queue.URL, err)
		}
		if source.Total() != 0 {
			settledPolls = 0
			return false, nil
		}
		deadLetters, err := sqsinfo.QueueDepth(d.waitCtx, d.sqsClient, d.queue.DeadLetterQueueURL)
		if err != nil {
			return false, fmt.Errorf("demo: reading the counts of %s: %w", d.queue.DeadLetterQueueURL, err)
		}
		settledPolls++
		_, delivered := d.endpoint.Totals()
		// Twice in a row, so a message between receive and delete is not missed.
		return settledPolls >= 2 && delivered+deadLetters.Visible >= d.plan.goodUnique+d.plan.expectedDLQ, nil
	})
	switch {
	case err != nil && !errors.Is(err, context.DeadlineExceeded):
		return err
	case err != nil:
		d.printf("timed out after %s waiting for every delivery to settle; counting what there is", d.o.Timeout)
	default:
		d.printf("source queue empty at %s (%s after the kill; the killed %s's messages reappear after the visibility timeout)",
			since(d.started), since(killedAt), d.h.unit())
	}
	d.dead, err = readDeadLetters(ctx, d.sqsClient, d.queue.DeadLetterQueueURL, d.plan)
	return err
}

// count tallies what the receiver saw against the plan and the dead-letter queue, and
// prints the details.
func (d *demoRun) count() (report, error) {
	suppressed, err := suppressedDuplicates(d.h.logPaths())
	if err != nil {
		return report{}, err
	}
	counts := d.endpoint.Counts()
	s := summary{Sent: len(d.plan.messages), Unique: len(d.plan.kinds), DuplicatesSuppressed: suppressed,
		Orders: d.orders.committed, RolledBack: len(d.orders.rolledBack), OutboxPublished: d.orders.published}
	for _, key := range d.orders.rolledBack {
		if counts[key].Requests > 0 || d.dead.keys[key] {
			s.Phantom++
		}
	}
	var lost, both []string
	for key := range d.plan.kinds {
		delivered := counts[key].Successes > 0
		if delivered {
			s.Delivered++
		}
		if counts[key].Successes > 1 {
			s.DoubleDelivered++
		}
		if d.dead.keys[key] {
			s.DeadLettered++
		}
		switch {
		case !delivered && !d.dead.keys[key]:
			lost = append(lost, key)
		case delivered && d.dead.keys[key]:
			both = append(both, key)
		}
	}
	s.Lost = len(lost)
	var crashedKeys []string
	for _, id := range d.crashed.messageIDs {
		crashedKeys = append(crashedKeys, d.keys[id])
	}
	sort.Strings(crashedKeys)
	crashedKeys = slices.Compact(crashedKeys) // both sends of a duplicate can be in one batch
	d.printDetails(s, lost, both, crashedKeys)
	return report{summary: s, DeadLetterReasons: d.dead.reasons, DeadLetters: d.dead.byKey, Crashed: crashedKeys, Resent: d.dead.resent}, nil
}

func (d *demoRun) printDetails(s summary, lost, both, crashedKeys []string) {
	totals, _ := d.endpoint.Totals()
	d.printf("receiver: %d requests, %d 2xx, %d 503, %d 410, %d abandoned by a client that went away",
		totals.Requests, totals.Successes, totals.Failures, totals.Gone, totals.Abandoned)
	d.printf("dead-letter queue: %d messages, %d unique deliveries, by reason: %s (left in %s for inspection)",
		d.dead.messages, len(d.dead.keys), formatReasons(d.dead.reasons), d.queue.DeadLetterQueueURL)
	if again := deadLetteredAgain(d.dead); len(again) > 0 {
		where := ""
		if len(crashedKeys) > 0 {
			where = fmt.Sprintf(" (the killed %s had in flight: %s)", d.h.unit(), strings.Join(crashedKeys, " "))
		}
		d.printf("note: dead-lettered more than once: %s%s", strings.Join(again, " "), where)
	}
	if s.DuplicatesSuppressed != s.Sent-s.Unique {
		d.printf("note: %d duplicate sends, but the workers suppressed %d messages as already completed (a killed %s's message can reappear after its delivery completed, and entries the killed relay sent but had not marked are sent again)",
			s.Sent-s.Unique, s.DuplicatesSuppressed, d.h.unit())
	}
	if len(lost) > 0 {
		sort.Strings(lost)
		d.printf("lost: %s", strings.Join(lost, " "))
	}
	if len(both) > 0 {
		sort.Strings(both)
		d.printf("delivered and dead-lettered: %s", strings.Join(both, " "))
	}
	d.printf("finished in %s", since(d.started))
}

// since returns the time since start, rounded for printing.
func since(start time.Time) time.Duration {
	return time.Since(start).Round(100 * time.Millisecond)
}

// poll calls check every interval until it reports done, fails, or ctx ends.
func poll(ctx context.Context, interval time.Duration, check func() (bool, error)) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

// deadLetters is what the dead-letter queue holds.
type deadLetters struct {
	keys     map[string]bool // unique delivery keys
	messages int
	reasons  map[string]int      // failure-reason attribute → messages
	byKey    map[string][]string // unique delivery key → the reason of each of its messages
	// resent lists the keys with two dead-letter messages of one outbox entry (the same
	// outbox-id attribute): a relay killed after SQS confirmed the entry's message but
	// before it settled the entry, so the next relay sent it again.
	resent []string
}

// readDeadLettersTimeout bounds how long readDeadLetters waits for messages the queue
// counts but no receive returns: far above what reading the demo's dead letters takes,
// so reaching it means the queue's count was wrong.
const readDeadLettersTimeout = time.Minute

// readDeadLetters looks at every message of the dead-letter queue with redrive.Peek
// (which makes them visible again, so the redrive tooling can inspect them), keys each
// by its body (the malformed ones) or its deliveryId, and counts the failure-reason
// attributes.
func readDeadLetters(ctx context.Context, client *sqs.Client, url string, p *plan) (deadLetters, error) {
	dead := deadLetters{keys: map[string]bool{}, reasons: map[string]int{}, byKey: map[string][]string{}}
	entries := map[string]map[string]int{} // key → outbox entry id → dead-letter messages
	depth, err := sqsinfo.QueueDepth(ctx, client, url)
	if err != nil {
		return dead, fmt.Errorf("demo: reading the counts of %s: %w", url, err)
	}
	expected := depth.Total()
	// Every message the queue counts, and any more a receive still finds; an empty long
	// poll short of the count is not the end (the emulator can return one under load).
	peeked, err := redrive.Peek(ctx, client, url, redrive.PeekOptions{
		MaxMessages: expected + sqsinfo.MaxBatchEntries, VisibilityTimeout: 2 * time.Minute, Patience: readDeadLettersTimeout,
	})
	if err != nil {
		return dead, fmt.Errorf("demo: reading the dead-letter queue: %w", err)
	}
	if len(peeked.Messages) < expected {
		return dead, fmt.Errorf("demo: read %d of the %d messages the dead-letter queue counts in %s", len(peeked.Messages), expected, readDeadLettersTimeout)
	}
	for _, message := range peeked.Messages {
		key, ok := p.malformed[message.Body]
		if !ok {
			var request struct {
				DeliveryID string `json:"deliveryId"`
			}
			_ = json.Unmarshal([]byte(message.Body), &request)
			key = request.DeliveryID
		}
		if _, known := p.kinds[key]; !known && !p.rolledBack[key] {
			key = "unknown:" + message.ID
		}
		dead.keys[key] = true
		reason := "redrive policy (maxReceiveCount)"
		if message.FailureReason != "" {
			reason = message.FailureReason
		}
		dead.reasons[reason]++
		dead.byKey[key] = append(dead.byKey[key], reason)
		if entry := message.MessageAttributes[outbox.AttributeOutboxID].StringValue; entry != "" {
			if entries[key] == nil {
				entries[key] = map[string]int{}
			}
			entries[key][entry]++
			if entries[key][entry] == 2 {
				dead.resent = append(dead.resent, key)
			}
		}
	}
	slices.Sort(dead.resent)
	dead.messages = len(peeked.Messages)
	return dead, nil
}

// deadLetteredAgain returns the keys with more than one dead-letter message, sorted.
func deadLetteredAgain(dead deadLetters) []string {
	var keys []string
	for key, reasons := range dead.byKey {
		if len(reasons) > 1 {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return keys
}

func formatReasons(reasons map[string]int) string {
	var parts []string
	for reason, count := range reasons {
		parts = append(parts, fmt.Sprintf("%s=%d", reason, count))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// suppressedDuplicates counts the distinct messages (the workers of a run consume only its
// queue, emptied at the start, so every line is one of the run's messages) that the
// workers deleted without delivering because the delivery was already completed, from
// the idempotency middleware's "already completed" lines (idempotency.LogCompletedDuplicate)
// of their JSON logs. A message first deferred because
// its delivery was in progress elsewhere, then skipped, counts once.
func suppressedDuplicates(logPaths []string) (int, error) {
	seen := map[string]bool{}
	for _, logPath := range logPaths {
		file, err := os.Open(logPath)
		if err != nil {
			return 0, fmt.Errorf("demo: %w", err)
		}
		scanner := bufio.NewScanner(file)
		scanner.Buffer(make([]byte, 64<<10), 1<<20)
		for scanner.Scan() {
			var line struct {
				Msg       string `json:"msg"`
				MessageID string `json:"message_id"`
			}
			if json.Unmarshal(scanner.Bytes(), &line) != nil || line.Msg != idempotency.LogCompletedDuplicate {
				continue
			}
			seen[line.MessageID] = true
		}
		err = scanner.Err()
		file.Close()
		if err != nil {
			return 0, fmt.Errorf("demo: reading %s: %w", logPath, err)
		}
	}
	return len(seen), nil
}
