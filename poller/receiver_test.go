package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker"
)

// blockingReceiveAPI is a fake whose ReceiveMessage calls block until the test answers
// them (or their context ends). It records how many calls are in flight at once and
// checks, at the start of each call, that the calls in flight together ask for no more
// messages than there are free slots: asked (in flight) + held ≤ slots, where held
// counts messages returned whose handler has not returned yet (a message's slot is
// given back only after that, so the check never fails a correct receiver).
type blockingReceiveAPI struct {
	*fakeAPI
	slots   int
	arrived chan *pendingReceive

	mu          sync.Mutex
	calls       []*pendingReceive
	inFlight    int
	maxInFlight int
	asked       int
	held        int
	violations  []string
	nextID      int
}

// pendingReceive is one ReceiveMessage call waiting for its answer.
type pendingReceive struct {
	ctx    context.Context
	input  *sqs.ReceiveMessageInput
	answer chan []types.Message
}

func newBlockingReceiveAPI(slots int) *blockingReceiveAPI {
	return &blockingReceiveAPI{fakeAPI: newFakeAPI(), slots: slots, arrived: make(chan *pendingReceive, 1000)}
}

func (f *blockingReceiveAPI) ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	call := &pendingReceive{ctx: ctx, input: input, answer: make(chan []types.Message, 1)}
	asked := int(input.MaxNumberOfMessages)
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.asked += asked
	if f.asked+f.held > f.slots {
		f.violations = append(f.violations, fmt.Sprintf("call %d asks for %d: %d asked in flight + %d held > %d slots", len(f.calls), asked, f.asked, f.held, f.slots))
	}
	f.mu.Unlock()
	f.arrived <- call
	var messages []types.Message
	var err error
	select {
	case messages = <-call.answer:
	case <-ctx.Done():
		err = ctx.Err()
	}
	f.mu.Lock()
	f.inFlight--
	f.asked -= asked
	f.held += len(messages)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &sqs.ReceiveMessageOutput{Messages: messages}, nil
}

// messages returns count new messages.
func (f *blockingReceiveAPI) messages(count int) []types.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	batch := make([]types.Message, count)
	for i := range batch {
		f.nextID++
		batch[i] = fakeMessage(fmt.Sprintf("m%d", f.nextID), 1)
	}
	return batch
}

// handled is called by the test's handler as it returns.
func (f *blockingReceiveAPI) handled() {
	f.mu.Lock()
	f.held--
	f.mu.Unlock()
}

func (f *blockingReceiveAPI) snapshot() (calls, inFlight, maxInFlight int, violations []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls), f.inFlight, f.maxInFlight, slices.Clone(f.violations)
}

// next waits for the next ReceiveMessage call.
func (f *blockingReceiveAPI) next(t *testing.T) *pendingReceive {
	t.Helper()
	select {
	case call := <-f.arrived:
		return call
	case <-time.After(5 * time.Second):
		t.Fatal("no ReceiveMessage call within 5s")
		return nil
	}
}

// noMoreCalls checks that no ReceiveMessage call starts within d.
func (f *blockingReceiveAPI) noMoreCalls(t *testing.T, d time.Duration, why string) {
	t.Helper()
	select {
	case call := <-f.arrived:
		t.Fatalf("a ReceiveMessage call for %d started; want none (%s)", call.input.MaxNumberOfMessages, why)
	case <-time.After(d):
	}
}

// released is a closed channel: a holdingHandler that does not hold.
var released = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// holdingHandler blocks every message until hold is closed, then lets it succeed.
func holdingHandler(api *blockingReceiveAPI, hold <-chan struct{}, handled *atomic.Int64) sqsworker.Handler {
	return sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		defer api.handled()
		defer handled.Add(1)
		<-hold
		return nil
	})
}

// TestTwoReceivesInFlight: with Concurrency 20 (MaxMessages 10, Receivers defaulted to
// 2) two ReceiveMessage calls are in flight at once, each asking for 10, and no third;
// once their 20 messages hold every slot no call starts until handlers finish; then
// both receivers poll again, asking for 20 in all.
func TestTwoReceivesInFlight(t *testing.T) {
	t.Parallel()
	api := newBlockingReceiveAPI(20)
	hold := make(chan struct{})
	var handled atomic.Int64
	server := startServer(t, api, Config{Concurrency: 20}, holdingHandler(api, hold, &handled))
	if got := server.config.Receivers; got != 2 {
		t.Fatalf("Receivers = %d, want the default 2", got)
	}
	first, second := api.next(t), api.next(t)
	if _, inFlight, _, _ := api.snapshot(); inFlight != 2 {
		t.Errorf("%d calls in flight, want 2", inFlight)
	}
	if first.input.MaxNumberOfMessages != 10 || second.input.MaxNumberOfMessages != 10 {
		t.Errorf("MaxNumberOfMessages = %d and %d, want 10 and 10", first.input.MaxNumberOfMessages, second.input.MaxNumberOfMessages)
	}
	api.noMoreCalls(t, 100*time.Millisecond, "two receivers, both in flight")

	first.answer <- api.messages(10)
	second.answer <- api.messages(10)
	eventually(t, "20 handlers running", func() bool { return server.Stats().InFlight == 20 })
	api.noMoreCalls(t, 100*time.Millisecond, "every slot is held")

	close(hold)
	third, fourth := api.next(t), api.next(t)
	if third.input.MaxNumberOfMessages+fourth.input.MaxNumberOfMessages != 20 {
		// The first receiver asks as soon as a slot is free, the second waits for the 10
		// the first leaves, so the first may ask for fewer than 10; not both.
		if third.input.MaxNumberOfMessages != 10 && fourth.input.MaxNumberOfMessages != 10 {
			t.Errorf("after the handlers finished: MaxNumberOfMessages = %d and %d, want one of them 10", third.input.MaxNumberOfMessages, fourth.input.MaxNumberOfMessages)
		}
	}
	if _, _, maxInFlight, violations := api.snapshot(); maxInFlight != 2 || len(violations) > 0 {
		t.Errorf("at most %d calls in flight (want 2); over-asking: %v", maxInFlight, violations)
	}
}

// TestReceivesNeverAskForMoreThanFreeSlots: with Concurrency 12 and MaxMessages 10 the
// two receivers ask for 10 and 2, then only for what the messages held leave free; under
// random traffic the calls in flight together never ask for more than the free slots.
func TestReceivesNeverAskForMoreThanFreeSlots(t *testing.T) {
	t.Parallel()
	api := newBlockingReceiveAPI(12)
	hold := make(chan struct{})
	var handled atomic.Int64
	server := startServer(t, api, Config{Concurrency: 12, MaxMessages: 10}, holdingHandler(api, hold, &handled))
	if got := server.config.Receivers; got != 2 {
		t.Fatalf("Receivers = %d, want the default 2", got)
	}

	// Scripted. 10 + 2 asked: every slot.
	first, second := api.next(t), api.next(t)
	if first.input.MaxNumberOfMessages < second.input.MaxNumberOfMessages {
		first, second = second, first
	}
	if first.input.MaxNumberOfMessages != 10 || second.input.MaxNumberOfMessages != 2 {
		t.Fatalf("MaxNumberOfMessages = %d and %d, want 10 and 2", first.input.MaxNumberOfMessages, second.input.MaxNumberOfMessages)
	}
	// 3 returned, 2 still asked: 7 free. With a call in flight, the receiver waits for a
	// full batch (10, what the call in flight leaves) rather than ask for 7.
	first.answer <- api.messages(3)
	api.noMoreCalls(t, 100*time.Millisecond, "3 held + 2 asked; the idle receiver waits for 10 free")
	// 2 more returned, no call in flight: one receiver asks for the 7 free at once.
	second.answer <- api.messages(2)
	third := api.next(t)
	if third.input.MaxNumberOfMessages != 7 {
		t.Errorf("with 5 of 12 slots held and no call in flight: MaxNumberOfMessages = %d, want 7", third.input.MaxNumberOfMessages)
	}
	api.noMoreCalls(t, 100*time.Millisecond, "5 held + 7 asked fill the 12 slots")
	third.answer <- api.messages(7)
	eventually(t, "12 handlers running", func() bool { return server.Stats().InFlight == 12 })
	api.noMoreCalls(t, 100*time.Millisecond, "every slot is held")

	// Random: answers of 0..asked messages after 0-3 ms, handlers of 0-2 ms.
	close(hold)
	stop := make(chan struct{})
	driverDone := make(chan struct{})
	go func() { // owned by the test: ends at stop, before the server's shutdown returns
		defer close(driverDone)
		for {
			select {
			case call := <-api.arrived:
				go func() { // ends once the call is answered
					time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
					call.answer <- api.messages(rand.IntN(int(call.input.MaxNumberOfMessages) + 1))
				}()
			case <-stop:
				return
			}
		}
	}()
	eventually(t, "300 messages handled", func() bool { return server.Stats().Deleted >= 300 })
	if err := server.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	close(stop)
	<-driverDone

	calls, _, maxInFlight, violations := api.snapshot()
	if len(violations) > 0 {
		t.Errorf("receives asked for more than the free slots:\n%v", violations)
	}
	if maxInFlight != 2 {
		t.Errorf("at most %d calls in flight, want 2", maxInFlight)
	}
	api.mu.Lock()
	for i, call := range api.calls {
		if n := call.input.MaxNumberOfMessages; n < 1 || n > 10 {
			t.Errorf("call %d asked for %d messages, want 1..10", i+1, n)
		}
	}
	api.mu.Unlock()
	t.Logf("%d ReceiveMessage calls, %d messages handled", calls, handled.Load())
}

// TestShutdownLeavesEveryReceiveInFlight: with two receives in flight at shutdown, no
// new one starts, neither is cancelled at the drain deadline, and what they return is
// released at once, never handled. Only the end of Shutdown's ctx cancels them.
func TestShutdownLeavesEveryReceiveInFlight(t *testing.T) {
	t.Parallel()
	t.Run("polls finish", func(t *testing.T) {
		t.Parallel()
		api := newBlockingReceiveAPI(20)
		var handled atomic.Int64
		server := startServer(t, api, Config{Concurrency: 20, DrainTimeout: 200 * time.Millisecond}, holdingHandler(api, released, &handled))
		first, second := api.next(t), api.next(t)
		result := make(chan error, 1)
		go func() { result <- server.Shutdown(context.Background()) }()
		time.Sleep(500 * time.Millisecond) // past the drain deadline
		select {
		case err := <-result:
			t.Fatalf("Shutdown returned (%v) while two long polls were in flight", err)
		default:
		}
		if first.ctx.Err() != nil || second.ctx.Err() != nil {
			t.Error("a long poll was cancelled at the drain deadline")
		}
		first.answer <- api.messages(2)
		second.answer <- api.messages(1)
		select {
		case err := <-result:
			if err != nil {
				t.Errorf("Shutdown = %v, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Shutdown did not return once the polls finished")
		}
		api.noMoreCalls(t, 50*time.Millisecond, "the server is closed")
		if calls, _, _, _ := api.snapshot(); calls != 2 {
			t.Errorf("%d ReceiveMessage calls, want 2 (none after the shutdown began)", calls)
		}
		if handled.Load() != 0 {
			t.Errorf("%d messages received after the shutdown began were handled", handled.Load())
		}
		_, _, batches, _ := api.recorded()
		var released []string
		for _, batch := range batches {
			for _, entry := range batch.Entries {
				if entry.VisibilityTimeout == 0 {
					released = append(released, aws.ToString(entry.ReceiptHandle))
				}
			}
		}
		slices.Sort(released)
		if fmt.Sprint(released) != "[rh-m1 rh-m2 rh-m3]" {
			t.Errorf("released %v, want the 3 messages the polls returned", released)
		}
		if stats := server.Stats(); stats.Released != 3 || stats.InFlight != 0 {
			t.Errorf("stats = %+v, want 3 released, none in flight", stats)
		}
	})
	t.Run("ctx ends", func(t *testing.T) {
		t.Parallel()
		api := newBlockingReceiveAPI(20)
		var handled atomic.Int64
		server := startServer(t, api, Config{Concurrency: 20, DrainTimeout: 100 * time.Millisecond}, holdingHandler(api, released, &handled))
		first, second := api.next(t), api.next(t)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		begin := time.Now()
		err := server.Shutdown(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want the ctx's DeadlineExceeded", err)
		}
		// The polls block until cancelled, so a Shutdown that waited for them would never
		// return; the upper bound only tells "returned at the ctx's end" from "hung" (a
		// tighter one failed under -race -count=20 on a loaded 2-core machine).
		if took := time.Since(begin); took < 300*time.Millisecond || took > 30*time.Second {
			t.Errorf("Shutdown took %s, want the ctx's 300ms plus the release", took)
		}
		if first.ctx.Err() == nil || second.ctx.Err() == nil {
			t.Error("a long poll was not cancelled at the end of Shutdown's ctx")
		}
		if calls, _, _, _ := api.snapshot(); calls != 2 {
			t.Errorf("%d ReceiveMessage calls, want 2", calls)
		}
	})
}

// TestReceiveErrorsBackOffTogether: with two receivers, failed receives pause both (one
// shared back-off, one probe at a time). Each call fails after 200 ms: by 1.2 s the calls
// are the two first ones and one probe at 0.7 s (two independent loops would have made
// four), logged once.
func TestReceiveErrorsBackOffTogether(t *testing.T) {
	t.Parallel()
	api := &slowFailingReceiveAPI{fakeAPI: newFakeAPI()}
	logs := newLogRecorder()
	server := startServer(t, api, Config{Concurrency: 20, Logger: slog.New(logs)}, nopHandler)
	time.Sleep(1200 * time.Millisecond)
	calls, maxInFlight := api.counts()
	if calls > 3 {
		t.Errorf("%d ReceiveMessage calls in 1.2s, want at most 3 (two at once, then one probe at 0.7s)", calls)
	}
	eventually(t, "the probe after the pause", func() bool { return server.Stats().ReceiveErrors >= 3 })
	if maxInFlight != 2 {
		t.Errorf("at most %d calls in flight, want 2 (both receivers before the first failure)", maxInFlight)
	}
	if got := logs.find(slog.LevelError, "poller: ReceiveMessage failed"); len(got) != 1 {
		t.Errorf("%d receive error logs, want 1", len(got))
	}
}

// slowFailingReceiveAPI fails every ReceiveMessage after 200 ms.
type slowFailingReceiveAPI struct {
	*fakeAPI
	mu                    sync.Mutex
	calls, inFlight, most int
}

func (f *slowFailingReceiveAPI) ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	f.calls++
	first := f.calls <= 2
	f.inFlight++
	f.most = max(f.most, f.inFlight)
	f.mu.Unlock()
	if first {
		// The two receivers' first calls fail only once both are in flight: on a busy
		// machine the second receiver may start later than 200 ms after the first.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			f.mu.Lock()
			both := f.most == 2
			f.mu.Unlock()
			if both {
				break
			}
		}
	}
	time.Sleep(200 * time.Millisecond)
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
	return nil, &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: "try again"}
}

func (f *slowFailingReceiveAPI) counts() (calls, maxInFlight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.most
}

// TestReceiveBackoff: the shared back-off's rules, without waiting for its delays.
func TestReceiveBackoff(t *testing.T) {
	t.Parallel()
	b := &receiveBackoff{changed: make(chan struct{})}
	stop := make(chan struct{})
	expire := func() { // skip the pause
		b.mu.Lock()
		b.until = time.Now()
		b.mu.Unlock()
	}
	delay := func() time.Duration {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.delay
	}
	waitAsync := func() <-chan [2]bool {
		result := make(chan [2]bool, 1)
		go func() { // ends when wait returns: at the latest at close(stop)
			probe, ok := b.wait(stop)
			result <- [2]bool{probe, ok}
		}()
		return result
	}
	blocked := func(result <-chan [2]bool, why string) {
		t.Helper()
		select {
		case got := <-result:
			t.Fatalf("wait returned %v; want it blocked (%s)", got, why)
		case <-time.After(50 * time.Millisecond):
		}
	}
	returns := func(result <-chan [2]bool, want [2]bool) {
		t.Helper()
		select {
		case got := <-result:
			if got != want {
				t.Fatalf("wait = (probe %v, ok %v), want (%v, %v)", got[0], got[1], want[0], want[1])
			}
		case <-time.After(5 * time.Second):
			t.Fatal("wait did not return")
		}
	}

	returns(waitAsync(), [2]bool{false, true}) // healthy: no probe, no wait
	b.failed(false, time.Now())
	if got := delay(); got != minReceiveErrorDelay {
		t.Fatalf("delay after the first failure = %s, want %s", got, minReceiveErrorDelay)
	}
	b.failed(false, time.Now()) // another loop's poll that began before the pause
	if got := delay(); got != minReceiveErrorDelay {
		t.Fatalf("a failure begun before the pause changed the delay to %s", got)
	}
	blocked(waitAsync(), "paused") // this waiter becomes the probe below
	expire()
	b.mu.Lock()
	b.broadcast()
	b.mu.Unlock()
	// The blocked waiter above now takes the probe; a second one waits for its result.
	eventually(t, "the blocked waiter takes the probe after the pause", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.probing
	})
	second := waitAsync()
	blocked(second, "a probe is in flight")
	b.failed(true, time.Now())
	if got := delay(); got != 2*minReceiveErrorDelay {
		t.Fatalf("delay after a failed probe = %s, want %s", got, 2*minReceiveErrorDelay)
	}
	blocked(second, "paused again")
	expire()
	returns(second, [2]bool{true, true}) // the next probe, once the pause is over
	third := waitAsync()
	blocked(third, "a probe is in flight")
	b.abandon(true) // the probing loop stops without calling: someone else may probe
	returns(third, [2]bool{true, true})
	b.succeeded(true)
	if got := delay(); got != 0 {
		t.Fatalf("delay after a successful probe = %s, want 0", got)
	}
	returns(waitAsync(), [2]bool{false, true})

	for range 10 {
		b.failed(true, time.Now())
	}
	if got := delay(); got != maxReceiveErrorDelay {
		t.Errorf("delay after many failed probes = %s, want the cap %s", got, maxReceiveErrorDelay)
	}
	paused := waitAsync()
	blocked(paused, "paused")
	close(stop)
	returns(paused, [2]bool{false, false})
}
