package scheduler_test

// CASES.md N16 (a tick due during a leader handoff) and N19 (long intervals, restarts,
// long downtime, run on start) on a fake clock (testing/synctest) against the emulators.
// A killed replica is one whose network is cut: its goroutines live on in the bubble
// but every call it makes fails.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/scheduler"
)

var errCut = errors.New("test: the replica is dead (its network is cut)")

// network is a replica's reach: cut makes every call fail; dieAfterSend cuts it right
// after the next SendMessage reached SQS, whose answer then never comes back.
type network struct {
	cut, dieAfterSend atomic.Bool
}

type cutSQS struct {
	*sqs.Client
	net *network
}

func (c cutSQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if c.net.cut.Load() {
		return nil, errCut
	}
	out, err := c.Client.SendMessage(ctx, in, opts...)
	if c.net.dieAfterSend.Load() {
		c.net.cut.Store(true)
		<-ctx.Done() // the answer never comes
		return nil, errCut
	}
	return out, err
}

func (c cutSQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	if c.net.cut.Load() {
		return nil, errCut
	}
	return c.Client.GetQueueAttributes(ctx, in, opts...)
}

type cutDynamoDB struct {
	*dynamodb.Client
	net *network
}

func (c cutDynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if c.net.cut.Load() {
		return nil, errCut
	}
	return c.Client.GetItem(ctx, in, opts...)
}

func (c cutDynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if c.net.cut.Load() {
		return nil, errCut
	}
	return c.Client.PutItem(ctx, in, opts...)
}

func (c cutDynamoDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if c.net.cut.Load() {
		return nil, errCut
	}
	return c.Client.UpdateItem(ctx, in, opts...)
}

func (c cutDynamoDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if c.net.cut.Load() {
		return nil, errCut
	}
	return c.Client.TransactWriteItems(ctx, in, opts...)
}

// replica is one scheduler of a test, with its network, events and logs.
type replica struct {
	*scheduler.Scheduler
	net    *network
	events *observed
	logs   *logRecorder
}

// fleet starts replicas in a bubble, all with config and schedules.
type fleet struct {
	t         *testing.T
	sqs       *sqs.Client
	dynamo    *dynamodb.Client
	config    scheduler.Config
	schedules []scheduler.Schedule
	started   []*replica
}

func newFleet(t *testing.T, cfg aws.Config, config scheduler.Config, schedules ...scheduler.Schedule) *fleet {
	sqsClient, dynamo := bubbleClients(cfg)
	return &fleet{t: t, sqs: sqsClient, dynamo: dynamo, config: config, schedules: schedules}
}

// start starts replica owner now.
func (f *fleet) start(owner string) *replica {
	f.t.Helper()
	r := &replica{net: &network{}, events: &observed{}, logs: newLogRecorder(f.t)}
	config := f.config
	config.Owner, config.Observer, config.Logger = owner, r.events, slog.New(r.logs)
	s, err := scheduler.New(cutSQS{f.sqs, r.net}, cutDynamoDB{f.dynamo, r.net}, config, f.schedules)
	require.NoError(f.t, err)
	r.Scheduler = s
	require.NoError(f.t, s.Start(context.Background()))
	f.t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	f.started = append(f.started, r)
	return r
}

// kill cuts the replica's network: it reaches nothing from now on and releases nothing.
func (r *replica) kill() { r.net.cut.Store(true) }

// stop shuts the replica down gracefully (it releases the lease).
func (r *replica) stop(t *testing.T) { require.NoError(t, r.Shutdown(context.Background())) }

// enqueued returns every replica's EventTickEnqueued by tick id.
func (f *fleet) enqueued() map[string][]scheduler.Event {
	out := map[string][]scheduler.Event{}
	for _, r := range f.started {
		for _, ev := range r.events.of(scheduler.EventTickEnqueued) {
			out[ev.TickID] = append(out[ev.TickID], ev)
		}
	}
	return out
}

func (f *fleet) all(kind scheduler.EventKind) []scheduler.Event {
	var out []scheduler.Event
	for _, r := range f.started {
		out = append(out, r.events.of(kind)...)
	}
	return out
}

// sleepUntil advances the fake clock to at and lets every replica finish what is due.
func sleepUntil(at time.Time) {
	time.Sleep(time.Until(at))
	synctest.Wait()
}

func at(text string) time.Time {
	parsed, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		panic(err)
	}
	return parsed
}

// N16 setup: lease 10 s renewed every 3 s, grace 13 s (lease + renew interval), policy
// skip; a daily schedule at 10:00 UTC and a minutely one.
func handoffFleet(t *testing.T, cfg aws.Config, table, queueURL string) *fleet {
	return newFleet(t, cfg, scheduler.Config{
		Table: table, LeaseDuration: 10 * time.Second, RenewInterval: 3 * time.Second, MissedAfter: 13 * time.Second,
	},
		scheduler.Schedule{Name: "daily", Cron: "0 10 * * *", JobType: "daily", Queue: queueURL},
		scheduler.Schedule{Name: "minutely", Cron: "* * * * *", JobType: "minutely", Queue: queueURL})
}

// N16 (1) and (2): the leader stops at 09:59:57.4 (SIGTERM: it releases the lease) and
// the next takes over at 10:00:00.7; or it dies at 09:59:59.0 and the standby takes
// over once the lease lapsed. Either way the 10:00 ticks are enqueued exactly once, by
// the new leader, as soon as it holds the lease, and logged as late by the handoff.
// Taken over later than the grace period (10:02:14), the daily tick follows the policy
// (skip) and is logged with how late it is.
func TestHandoffTickIsEnqueuedOnceByTheNextLeader(t *testing.T) {
	t.Parallel()
	cfg := testenv.AWSConfig(t)
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	daily := at("2026-12-01T10:00:00Z")
	for _, c := range []struct {
		name     string
		takeover func(t *testing.T, f *fleet, a *replica) *replica
		late     time.Duration // of the daily tick when enqueued; 0: skipped
	}{
		{"SIGTERM at 09:59:57.4, next at 10:00:00.7", func(t *testing.T, f *fleet, a *replica) *replica {
			sleepUntil(at("2026-12-01T09:59:57.4Z"))
			a.stop(t)
			sleepUntil(at("2026-12-01T10:00:00.7Z"))
			return f.start("b")
		}, 700 * time.Millisecond},
		{"SIGKILL at 09:59:59.0, standby waiting", func(t *testing.T, f *fleet, a *replica) *replica {
			b := f.start("b")
			sleepUntil(at("2026-12-01T09:59:59Z"))
			a.kill()
			return b
		}, 0}, // the standby takes over when the lease lapses: its late is checked below
		{"SIGKILL at 09:59:59.0, next at 10:02:14", func(t *testing.T, f *fleet, a *replica) *replica {
			sleepUntil(at("2026-12-01T09:59:59Z"))
			a.kill()
			sleepUntil(at("2026-12-01T10:02:14Z"))
			return f.start("b")
		}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
			table := testenv.NewTable(t, dynamo)
			synctest.Test(t, func(t *testing.T) {
				f := handoffFleet(t, cfg, table, queue.URL)
				sleepUntil(at("2026-12-01T09:58:00Z"))
				a := f.start("a")
				synctest.Wait() // a holds the lease
				b := c.takeover(t, f, a)
				sleepUntil(at("2026-12-01T10:03:30Z"))

				gained := b.events.of(scheduler.EventLeadershipGained)
				require.NotEmpty(t, gained)
				took := gained[0].Time
				enqueued := f.enqueued()
				dailyID := scheduler.TickID("daily", daily)
				if c.late < 0 { // later than the grace period: skipped, logged with its lateness
					assert.Empty(t, enqueued[dailyID])
					missed := b.logs.matching("scheduler: missed ticks")
					require.NotEmpty(t, missed)
					var line logRecord
					for _, r := range missed {
						if r.attrs["schedule"] == "daily" {
							line = r
						}
					}
					assert.Equal(t, map[string]string{"missed": "1", "enqueued": "0", "skipped": "1", "policy": "skip", "late": "2m14s"},
						pick(line.attrs, "missed", "enqueued", "skipped", "policy", "late"))
					assert.Len(t, b.events.of(scheduler.EventTicksSkipped), 2, "the daily tick and the minutely ones before 10:02")
					return
				}
				require.Len(t, enqueued[dailyID], 1, "the daily tick enqueued once")
				ev := enqueued[dailyID][0]
				assert.Equal(t, "b", ev.Owner)
				assert.LessOrEqual(t, ev.Time.Sub(took), time.Second, "within 1 s of taking the lease")
				late := ev.Time.Sub(daily)
				if c.late > 0 {
					assert.Equal(t, c.late, late)
				} else {
					assert.Less(t, late, 13*time.Second, "the takeover is within the grace period")
				}
				var line logRecord
				for _, r := range b.logs.matching("scheduler: tick enqueued late (leader handoff)") {
					if r.attrs["tick_id"] == dailyID {
						line = r
					}
				}
				assert.Equal(t, late.Round(100*time.Millisecond).String(), line.attrs["late"], "the handoff is logged")
				for id, evs := range enqueued {
					assert.Len(t, evs, 1, "tick %s enqueued once", id)
				}
				assert.Empty(t, f.all(scheduler.EventTicksSkipped), "no tick missed")
			})
		})
	}
}

func pick(attrs map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, key := range keys {
		out[key] = attrs[key]
	}
	return out
}

// N16 (3): the leader claims the 10:00 tick, SQS takes its message, and the leader dies
// before SendMessage answers. The standby takes over when the lease lapses and sends the
// tick again: two copies on a standard queue, one on a FIFO queue (deduplication id),
// and the README's consumer runs the tick's handler once.
func TestLeaderDiedDuringSendRunsTheTickOnce(t *testing.T) {
	t.Parallel()
	cfg := testenv.AWSConfig(t)
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	for _, fifo := range []bool{false, true} {
		t.Run(map[bool]string{false: "standard", true: "FIFO"}[fifo], func(t *testing.T) {
			t.Parallel()
			queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{FIFO: fifo})
			table := testenv.NewTable(t, dynamo)
			dailyID := scheduler.TickID("daily", at("2026-12-01T10:00:00Z"))
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(t, cfg, scheduler.Config{Table: table, LeaseDuration: 10 * time.Second, RenewInterval: 3 * time.Second},
					scheduler.Schedule{Name: "daily", Cron: "0 10 * * *", JobType: "daily", Queue: queue.URL})
				sleepUntil(at("2026-12-01T09:59:00Z"))
				a := f.start("a")
				a.net.dieAfterSend.Store(true)
				synctest.Wait() // a holds the lease
				b := f.start("b")
				sleepUntil(at("2026-12-01T10:01:00Z"))

				claimed := a.events.of(scheduler.EventTickClaimed)
				require.Len(t, claimed, 1)
				assert.Equal(t, dailyID, claimed[0].TickID, "the dead leader claimed the tick")
				assert.Empty(t, a.events.of(scheduler.EventTickEnqueued))
				enqueued := b.events.of(scheduler.EventTickEnqueued)
				require.Len(t, enqueued, 1)
				assert.Equal(t, dailyID, enqueued[0].TickID)
				assert.Equal(t, 2, enqueued[0].Attempt, "sent again by the next leader")
				assert.Less(t, enqueued[0].Time.Sub(at("2026-12-01T10:00:00Z")), 13*time.Second, "within a takeover")
			})
			consumer := startTickConsumer(t, sqsClient, dynamo, table, queue.URL, "daily")
			consumer.drained(t, sqsClient, queue.URL, 1)
			runs, delivered := consumer.counts()
			assert.Equal(t, map[string]int{dailyID: 1}, runs, "handler runs")
			assert.Equal(t, map[string]int{dailyID: map[bool]int{false: 2, true: 1}[fifo]}, delivered, "copies")
		})
	}
}

// N16 (4): two hours of a minutely schedule across three handoffs at random seconds
// (a kill, a graceful stop, a kill), with one standby at a time: every one of the 120
// ticks is enqueued once, none is missed, and the README's consumer runs each once. (A
// 30 s lease here, not N16's 10 s: every renewal and standby read is a call to moto, two
// hours of them at 3 s took 80 s.)
func TestMinutelyAcrossRandomHandoffs(t *testing.T) {
	t.Parallel()
	cfg := testenv.AWSConfig(t)
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	begin := at("2026-12-01T08:00:00Z")
	random := rand.New(rand.NewPCG(19, 16))
	var handoffs []time.Time
	for i := range 3 {
		// At a random second from :40 on: a killed leader's lease (30 s, renewed every 10
		// s) then lapses after the next minute's tick, which falls due during the handoff.
		handoffs = append(handoffs, begin.Add(time.Duration(20+40*i)*time.Minute+time.Duration(40_000+random.IntN(20_000))*time.Millisecond))
	}
	t.Logf("handoffs at %v", handoffs)
	var ids []string
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, cfg, scheduler.Config{Table: table, LeaseDuration: 30 * time.Second, RenewInterval: 10 * time.Second},
			scheduler.Schedule{Name: "minutely", Cron: "* * * * *", JobType: "minutely", Queue: queue.URL})
		sleepUntil(begin.Add(-30 * time.Second))
		leader := f.start("r1")
		synctest.Wait() // r1 holds the lease
		standby := f.start("r2")
		for i, handoff := range handoffs {
			sleepUntil(handoff)
			if i == 1 {
				leader.stop(t)
			} else {
				leader.kill()
			}
			sleepUntil(handoff.Add(45 * time.Second)) // the lease lapsed and the standby took it
			require.True(t, leads(standby), "the standby took over after handoff %d", i+1)
			leader, standby = standby, f.start(fmt.Sprintf("r%d", i+3))
		}
		sleepUntil(begin.Add(119*time.Minute + 30*time.Second))
		enqueued := f.enqueued()
		for minute := range 120 {
			id := scheduler.TickID("minutely", begin.Add(time.Duration(minute)*time.Minute))
			ids = append(ids, id)
			assert.Len(t, enqueued[id], 1, "tick %s enqueued once", id)
		}
		assert.Len(t, enqueued, 120)
		assert.Empty(t, f.all(scheduler.EventTicksSkipped), "no tick missed")
		handoffLines := 0
		for _, r := range f.started {
			handoffLines += len(r.logs.matching("scheduler: tick enqueued late (leader handoff)"))
		}
		assert.GreaterOrEqual(t, handoffLines, 2, "the ticks due while a killed leader's lease lapsed, enqueued by the next leader")
		t.Logf("%d ticks enqueued after a handoff, late by less than the grace period", handoffLines)
	})
	consumer := startTickConsumer(t, sqsClient, dynamo, table, queue.URL, "minutely")
	consumer.drained(t, sqsClient, queue.URL, len(ids))
	runs, _ := consumer.counts()
	for _, id := range ids {
		assert.Equal(t, 1, runs[id], "handler runs of %s", id)
	}
}

// leads reports whether r leads now: it gained the lease more often than it lost it.
func leads(r *replica) bool {
	return len(r.events.of(scheduler.EventLeadershipGained)) > len(r.events.of(scheduler.EventLeadershipLost))
}
