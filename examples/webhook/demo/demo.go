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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/examples/webhook/receiver"
	"github.com/sqsworker/sqsworker/internal/provision"
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
	}
}

// summary is the demo's result; String is the summary line.
type summary struct {
	Sent, Unique, Delivered, DuplicatesSuppressed, DeadLettered, Lost, DoubleDelivered int
}

func (s summary) String() string {
	return fmt.Sprintf("demo: sent=%d unique=%d delivered=%d duplicates_suppressed=%d dead_lettered=%d lost=%d double_delivered=%d",
		s.Sent, s.Unique, s.Delivered, s.DuplicatesSuppressed, s.DeadLettered, s.Lost, s.DoubleDelivered)
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
}

// run is the demo: provision, send, run the host, kill one of its units, wait, count.
// It prints progress lines to out (not the summary line) and returns what it counted.
// err is set when the run could not be completed or the host did not stop cleanly; the
// report is zero when the run failed before counting.
func run(ctx context.Context, o options, out io.Writer) (report, error) {
	started := time.Now()
	printf := func(format string, args ...any) { fmt.Fprintf(out, "demo: "+format+"\n", args...) }
	for _, name := range []string{"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB"} {
		if os.Getenv(name) == "" {
			// The demo purges its queues and empties its table: never against an account
			// the default chain happens to point at.
			return report{}, fmt.Errorf("demo: %s is not set; run `make demo`, or eval \"$(localstack/env)\" first", name)
		}
	}
	root, err := provision.ModuleRoot(".")
	if err != nil {
		return report{}, err
	}
	resources := o.Resources
	if resources == nil {
		if resources, err = provision.LoadFile(filepath.Join(root, provision.ResourcesFile)); err != nil {
			return report{}, err
		}
	}
	if len(resources.Queues) == 0 || resources.Queues[0].DeadLetterQueue == nil || len(resources.Tables) == 0 {
		return report{}, errors.New("demo: the resources need a queue with a dead-letter queue and a table")
	}
	h, err := newHost(o)
	if err != nil {
		return report{}, err
	}
	defer h.close()
	if o.MaxFailuresPerDelivery >= resources.Queues[0].MaxReceiveCount {
		return report{}, fmt.Errorf("demo: MaxFailuresPerDelivery %d must stay below maxReceiveCount %d, or 503s alone could dead-letter a delivery", o.MaxFailuresPerDelivery, resources.Queues[0].MaxReceiveCount)
	}
	visibility := time.Duration(resources.Queues[0].VisibilityTimeoutSeconds) * time.Second
	if o.Host == hostLambda && o.FunctionTimeout >= visibility {
		return report{}, fmt.Errorf("demo: function timeout %s must stay below the visibility timeout %s: the idempotency lease ends with the invocation", o.FunctionTimeout, visibility)
	}
	logDir := o.LogDir
	if logDir == "" {
		if logDir, err = os.MkdirTemp("", "sqsworker-demo-"); err != nil {
			return report{}, err
		}
	}

	// The worker first: a build error should stop the demo before it touches SQS.
	if err := h.build(ctx, root, logDir); err != nil {
		return report{}, err
	}

	awsConfig, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return report{}, fmt.Errorf("demo: loading the AWS configuration: %w", err)
	}
	sqsClient, dynamoClient := sqs.NewFromConfig(awsConfig), dynamodb.NewFromConfig(awsConfig)

	// 1. Provision and reset.
	provisioned, err := provision.Apply(ctx, sqsClient, dynamoClient, resources, provision.Options{Reset: true})
	if err != nil {
		return report{}, err
	}
	queue, table := provisioned.Queues[0], provisioned.Tables[0]
	printf("provisioned and emptied %s (visibility %ds, maxReceiveCount %d), %s and table %s",
		queue.Name, resources.Queues[0].VisibilityTimeoutSeconds, resources.Queues[0].MaxReceiveCount,
		resources.Queues[0].DeadLetterQueue.Name, table.Name)
	if table.TTLWarning != "" {
		printf("note: %s", table.TTLWarning)
	}

	// 2. The receiver.
	endpoint, err := receiver.Start(receiver.Config{FailureRate: o.FailureRate, Seed: o.Seed, MaxFailuresPerDelivery: o.MaxFailuresPerDelivery})
	if err != nil {
		return report{}, err
	}
	defer endpoint.Close()
	printf("receiver on %s: %.0f%% of requests answer 503 (at most %d per delivery), %s* answers 410",
		endpoint.URL(), o.FailureRate*100, o.MaxFailuresPerDelivery, receiver.GonePrefix)

	// 3. Send.
	p, err := makePlan(o, endpoint.URL())
	if err != nil {
		return report{}, err
	}
	messageKeys, err := send(ctx, sqsClient, queue.URL, p.messages)
	if err != nil {
		return report{}, err
	}
	printf("sent %d messages: %d good deliveries, %d duplicate sends, %d to %s endpoints, %d malformed",
		len(p.messages), p.goodUnique, p.duplicates, o.Gone, receiver.GonePrefix, o.Malformed)

	// 4. The host.
	deadline := time.Now().Add(o.Timeout)
	waitCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if err := h.start(waitCtx, setup{options: o, queueURL: queue.URL, table: table.Name, logDir: logDir, sqs: sqsClient, printf: printf}); err != nil {
		return report{}, err
	}

	// 5. Kill one unit once a share of the good deliveries is delivered, at a moment
	// when none of its handlers is between a 2xx response and its COMPLETED write.
	threshold := max(1, int(float64(p.goodUnique)*o.KillAfter))
	if err := poll(waitCtx, 20*time.Millisecond, func() (bool, error) {
		_, delivered := endpoint.Totals()
		return delivered >= threshold, h.check()
	}); err != nil {
		return report{}, fmt.Errorf("demo: waiting for %d deliveries before the kill: %w", threshold, err)
	}
	endpoint.Pause()
	if err := poll(waitCtx, 20*time.Millisecond, func() (bool, error) {
		return time.Since(endpoint.LastResponseAt()) >= time.Second, nil
	}); err != nil {
		endpoint.Resume()
		return report{}, err
	}
	_, deliveredAtKill := endpoint.Totals()
	held := endpoint.Held()
	crashed, err := h.crash(waitCtx)
	endpoint.Resume()
	if err != nil {
		return report{}, err
	}
	killedAt := time.Now()
	printf("%s at %s, after %d of %d good deliveries, with the receiver holding %d requests of both %ss",
		crashed.description, since(started), deliveredAtKill, p.goodUnique, held, h.unit())

	// 6. Wait until the source queue is drained (the killed unit's messages reappear
	// after the visibility timeout), then count the dead-letter queue.
	settledPolls := 0
	if err := poll(waitCtx, 250*time.Millisecond, func() (bool, error) {
		if err := h.check(); err != nil {
			return false, err
		}
		visible, inFlight, delayed, err := queueCounts(waitCtx, sqsClient, queue.URL)
		if err != nil {
			return false, err
		}
		if visible+inFlight+delayed != 0 {
			settledPolls = 0
			return false, nil
		}
		dlqCount, _, _, err := queueCounts(waitCtx, sqsClient, queue.DeadLetterQueueURL)
		if err != nil {
			return false, err
		}
		settledPolls++
		_, delivered := endpoint.Totals()
		// Twice in a row, so a message between receive and delete is not missed.
		return settledPolls >= 2 && delivered+dlqCount >= p.goodUnique+p.expectedDLQ, nil
	}); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return report{}, err
	} else if err != nil {
		printf("timed out after %s waiting for every delivery to settle; counting what there is", o.Timeout)
	} else {
		printf("source queue empty at %s (%s after the kill; the killed %s's messages reappear after the visibility timeout)",
			since(started), since(killedAt), h.unit())
	}
	dead, err := readDeadLetters(ctx, sqsClient, queue.DeadLetterQueueURL, p)
	if err != nil {
		return report{}, err
	}

	// Graceful stop of what is left.
	stopErr := h.stop()

	// 7. Count.
	suppressed, err := suppressedDuplicates(h.logPaths(), messageKeys)
	if err != nil {
		return report{}, err
	}
	counts := endpoint.Counts()
	s := summary{Sent: len(p.messages), Unique: len(p.kinds), DuplicatesSuppressed: suppressed}
	var lost, both []string
	for key := range p.kinds {
		delivered := counts[key].Successes > 0
		if delivered {
			s.Delivered++
		}
		if counts[key].Successes > 1 {
			s.DoubleDelivered++
		}
		if dead.keys[key] {
			s.DeadLettered++
		}
		switch {
		case !delivered && !dead.keys[key]:
			lost = append(lost, key)
		case delivered && dead.keys[key]:
			both = append(both, key)
		}
	}
	s.Lost = len(lost)
	var crashedKeys []string
	for _, id := range crashed.messageIDs {
		crashedKeys = append(crashedKeys, messageKeys[id])
	}
	sort.Strings(crashedKeys)
	crashedKeys = slices.Compact(crashedKeys) // both sends of a duplicate can be in one batch
	totals, _ := endpoint.Totals()
	printf("receiver: %d requests, %d 2xx, %d 503, %d 410, %d abandoned by a client that went away",
		totals.Requests, totals.Successes, totals.Failures, totals.Gone, totals.Abandoned)
	printf("dead-letter queue: %d messages, %d unique deliveries, by reason: %s (left in %s for inspection)",
		dead.messages, len(dead.keys), formatReasons(dead.reasons), queue.DeadLetterQueueURL)
	if again := deadLetteredAgain(dead); len(again) > 0 {
		where := ""
		if len(crashedKeys) > 0 {
			where = fmt.Sprintf(" (the killed %s had in flight: %s)", h.unit(), strings.Join(crashedKeys, " "))
		}
		printf("note: dead-lettered more than once: %s%s", strings.Join(again, " "), where)
	}
	if s.DuplicatesSuppressed != s.Sent-s.Unique {
		printf("note: %d duplicate sends, but the workers suppressed %d messages as already completed (a killed %s's message can reappear after its delivery completed)",
			s.Sent-s.Unique, s.DuplicatesSuppressed, h.unit())
	}
	if len(lost) > 0 {
		sort.Strings(lost)
		printf("lost: %s", strings.Join(lost, " "))
	}
	if len(both) > 0 {
		sort.Strings(both)
		printf("delivered and dead-lettered: %s", strings.Join(both, " "))
	}
	printf("finished in %s", since(started))
	return report{summary: s, DeadLetterReasons: dead.reasons, DeadLetters: dead.byKey, Crashed: crashedKeys}, stopErr
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

// send sends the messages with SendMessageBatch, ten at a time from a few goroutines,
// retrying failed entries, and returns the key of each message id.
func send(ctx context.Context, client *sqs.Client, queueURL string, messages []planned) (map[string]string, error) {
	keys := make(map[string]string, len(messages))
	var mu sync.Mutex
	batches := make(chan []planned)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for batch := range batches {
				if err := sendBatch(ctx, client, queueURL, batch, func(id, key string) {
					mu.Lock()
					keys[id] = key
					mu.Unlock()
				}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	go func() {
		defer close(batches)
		for start := 0; start < len(messages); start += 10 {
			select {
			case batches <- messages[start:min(start+10, len(messages))]:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for range batches { // drain after a failure
	}
	if err := errors.Join(<-errs, ctx.Err()); err != nil {
		return nil, err
	}
	if len(keys) != len(messages) {
		return nil, fmt.Errorf("demo: sent %d of %d messages", len(keys), len(messages))
	}
	return keys, nil
}

func sendBatch(ctx context.Context, client *sqs.Client, queueURL string, batch []planned, sent func(id, key string)) error {
	pending := map[string]planned{}
	for i, message := range batch {
		pending[strconv.Itoa(i)] = message
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == 5 {
			return fmt.Errorf("demo: %d messages still failing after 5 SendMessageBatch attempts", len(pending))
		}
		var entries []sqstypes.SendMessageBatchRequestEntry
		for id, message := range pending {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(message.body)})
		}
		output, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
		if err != nil {
			return fmt.Errorf("demo: SendMessageBatch: %w", err)
		}
		for _, ok := range output.Successful {
			id := aws.ToString(ok.Id)
			sent(aws.ToString(ok.MessageId), pending[id].key)
			delete(pending, id)
		}
	}
	return nil
}

func queueCounts(ctx context.Context, client *sqs.Client, url string) (visible, inFlight, delayed int, err error) {
	output, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("demo: reading the counts of %s: %w", url, err)
	}
	number := func(name sqstypes.QueueAttributeName) int {
		value, _ := strconv.Atoi(output.Attributes[string(name)])
		return value
	}
	return number(sqstypes.QueueAttributeNameApproximateNumberOfMessages),
		number(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		number(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed), nil
}

// deadLetters is what the dead-letter queue holds.
type deadLetters struct {
	keys     map[string]bool // unique delivery keys
	messages int
	reasons  map[string]int      // failure-reason attribute → messages
	byKey    map[string][]string // unique delivery key → the reason of each of its messages
}

// readDeadLettersTimeout bounds readDeadLetters: far above what reading the demo's dead
// letters takes, so reaching it means the queue's count was wrong.
const readDeadLettersTimeout = time.Minute

// readDeadLetters receives every message of the dead-letter queue, keys it by its body
// (the malformed ones) or its deliveryId, then makes them all visible again, so the
// redrive tooling can inspect them. It also counts the failure-reason attributes.
func readDeadLetters(ctx context.Context, client *sqs.Client, url string, p *plan) (deadLetters, error) {
	dead := deadLetters{keys: map[string]bool{}, reasons: map[string]int{}, byKey: map[string][]string{}}
	var handles []string
	defer func() {
		// Release what was received, ten at a time; the messages stay in the queue.
		for start := 0; start < len(handles); start += 10 {
			var entries []sqstypes.ChangeMessageVisibilityBatchRequestEntry
			for i, handle := range handles[start:min(start+10, len(handles))] {
				entries = append(entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{
					Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(handle), VisibilityTimeout: 0,
				})
			}
			_, _ = client.ChangeMessageVisibilityBatch(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
		}
	}()
	expected, _, _, err := queueCounts(ctx, client, url)
	if err != nil {
		return dead, err
	}
	// Receive until the count read above is reached and a short poll finds nothing more.
	// An empty long poll short of the count is not the end: the emulator can return one
	// under load while messages are visible.
	deadline := time.Now().Add(readDeadLettersTimeout)
	for {
		reached := len(handles) >= expected
		if !reached && time.Now().After(deadline) {
			return dead, fmt.Errorf("demo: read %d of the %d messages the dead-letter queue counts in %s", len(handles), expected, readDeadLettersTimeout)
		}
		wait := int32(1)
		if reached {
			wait = 0
		}
		output, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:              aws.String(url),
			MaxNumberOfMessages:   10,
			WaitTimeSeconds:       wait,
			VisibilityTimeout:     120,
			MessageAttributeNames: []string{sqsworker.AttributeFailureReason},
		})
		if err != nil {
			return dead, fmt.Errorf("demo: reading the dead-letter queue: %w", err)
		}
		if len(output.Messages) == 0 {
			if reached {
				break
			}
			continue
		}
		for _, message := range output.Messages {
			handles = append(handles, aws.ToString(message.ReceiptHandle))
			body := aws.ToString(message.Body)
			key, ok := p.malformed[body]
			if !ok {
				var request struct {
					DeliveryID string `json:"deliveryId"`
				}
				_ = json.Unmarshal([]byte(body), &request)
				key = request.DeliveryID
			}
			if _, known := p.kinds[key]; !known {
				key = "unknown:" + aws.ToString(message.MessageId)
			}
			dead.keys[key] = true
			reason := "redrive policy (maxReceiveCount)"
			if attribute, ok := message.MessageAttributes[sqsworker.AttributeFailureReason]; ok {
				reason = aws.ToString(attribute.StringValue)
			}
			dead.reasons[reason]++
			dead.byKey[key] = append(dead.byKey[key], reason)
		}
	}
	dead.messages = len(handles)
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

// suppressedDuplicates counts the distinct messages (of those the demo sent) that the
// workers deleted without delivering because the delivery was already completed, from
// the "duplicate suppressed" lines of their JSON logs. A message first deferred because
// its delivery was in progress elsewhere, then skipped, counts once.
func suppressedDuplicates(logPaths []string, messageKeys map[string]string) (int, error) {
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
			if json.Unmarshal(scanner.Bytes(), &line) != nil || line.Msg != "webhook: duplicate suppressed" {
				continue
			}
			if _, ours := messageKeys[line.MessageID]; ours {
				seen[line.MessageID] = true
			}
		}
		err = scanner.Err()
		file.Close()
		if err != nil {
			return 0, fmt.Errorf("demo: reading %s: %w", logPath, err)
		}
	}
	return len(seen), nil
}
