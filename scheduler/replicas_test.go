//go:build unix

package scheduler_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// replicaLine is one event line of the replica binary (scheduler/internal/replica).
type replicaLine struct {
	Kind      string    `json:"kind"`
	Owner     string    `json:"owner"`
	Token     int64     `json:"token"`
	TickID    string    `json:"tick_id"`
	MessageID string    `json:"message_id"`
	Skipped   int64     `json:"skipped"`
	Attempt   int       `json:"attempt"`
	Reason    string    `json:"reason"`
	Time      time.Time `json:"time"`
	Err       string    `json:"err"`
}

// replicaSet runs replica processes and collects their event lines.
type replicaSet struct {
	t        *testing.T
	binary   string
	args     []string
	mu       sync.Mutex
	lines    []replicaLine
	procs    map[string]*exec.Cmd
	exited   map[string]chan struct{}
	launched int
}

// buildReplica compiles the replica binary into a temporary directory.
func buildReplica(t *testing.T) string {
	t.Helper()
	binary := filepath.Join(t.TempDir(), "replica")
	build := exec.Command("go", "build", "-o", binary, "./internal/replica")
	output, err := build.CombinedOutput()
	require.NoError(t, err, "go build ./internal/replica: %s", output)
	return binary
}

// start launches one more replica named "r<n>", with env added to the test's
// environment.
func (r *replicaSet) start(env ...string) string {
	r.t.Helper()
	r.mu.Lock()
	r.launched++
	name := fmt.Sprintf("r%d", r.launched)
	r.mu.Unlock()
	cmd := exec.Command(r.binary, append([]string{"-owner", name}, r.args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = &prefixWriter{t: r.t, prefix: name}
	stdout, err := cmd.StdoutPipe()
	require.NoError(r.t, err)
	require.NoError(r.t, cmd.Start())
	exited := make(chan struct{})
	r.mu.Lock()
	r.procs[name], r.exited[name] = cmd, exited
	r.mu.Unlock()
	go func() { // owned by the test: ends when the process's stdout closes
		defer close(exited)
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			var line replicaLine
			if err := json.Unmarshal(scanner.Bytes(), &line); err != nil {
				r.t.Errorf("%s printed a line that is not an event: %q", name, scanner.Text())
				continue
			}
			r.mu.Lock()
			r.lines = append(r.lines, line)
			r.mu.Unlock()
		}
		_ = cmd.Wait()
	}()
	return name
}

func (r *replicaSet) signal(name string, sig syscall.Signal) {
	r.t.Helper()
	r.mu.Lock()
	cmd := r.procs[name]
	r.mu.Unlock()
	require.NoError(r.t, cmd.Process.Signal(sig), "signal %s to %s", sig, name)
}

// kill SIGKILLs a replica and waits until it is gone.
func (r *replicaSet) kill(name string) {
	r.signal(name, syscall.SIGKILL)
	<-r.exited[name]
	r.mu.Lock()
	delete(r.procs, name)
	r.mu.Unlock()
}

// stopAll sends SIGTERM to every live replica and waits for them to exit.
func (r *replicaSet) stopAll() {
	r.mu.Lock()
	names := make([]string, 0, len(r.procs))
	for name := range r.procs {
		names = append(names, name)
	}
	r.mu.Unlock()
	for _, name := range names {
		r.signal(name, syscall.SIGTERM)
	}
	for _, name := range names {
		select {
		case <-r.exited[name]:
		case <-time.After(30 * time.Second):
			r.t.Errorf("%s did not exit within 30s of SIGTERM", name)
			r.signal(name, syscall.SIGKILL)
		}
	}
}

func (r *replicaSet) snapshot() []replicaLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

// leader returns the replica leading with the highest token that has enqueued a tick
// under it and not reported its loss.
func (r *replicaSet) leader() (string, int64, bool) {
	var name string
	var token int64
	lost := map[int64]bool{}
	for _, line := range r.snapshot() {
		switch line.Kind {
		case "tick-enqueued":
			if line.Token > token {
				name, token = line.Owner, line.Token
			}
		case "leadership-lost":
			lost[line.Token] = true
		}
	}
	return name, token, name != "" && !lost[token]
}

// firstEnqueueAfter returns the first tick enqueued after t by a replica other than
// excluded.
func (r *replicaSet) firstEnqueueAfter(t time.Time, excluded string) (replicaLine, bool) {
	for _, line := range r.snapshot() {
		if line.Kind == "tick-enqueued" && line.Owner != excluded && line.Time.After(t) {
			return line, true
		}
	}
	return replicaLine{}, false
}

// prefixWriter forwards a replica's log lines to the test log.
type prefixWriter struct {
	t      *testing.T
	prefix string
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s: %s", w.prefix, p)
	return len(p), nil
}

// Three replicas on a 2-second schedule for a window (SQSWORKER_SCHEDULER_WINDOW, default
// 2m). The leader is SIGKILLed twice (a new replica replaces each) and the third leader
// is paused (SIGSTOP) past its lease, then resumed. Every tick from the first to the last
// is recorded as enqueued once, up to the end of the window, and the README's consumer
// (the idempotency middleware) runs each tick's handler exactly once; the queue ends
// empty; none is missing (catch_up covers the failovers, nothing is skipped); fencing
// tokens grow at each takeover; the resumed old leader claims nothing after its pause
// and reports the loss of its lease. The failover times are logged.
func TestReplicasEnqueueEveryTickExactlyOnce(t *testing.T) {
	t.Parallel()
	window := 2 * time.Minute
	if text := os.Getenv("SQSWORKER_SCHEDULER_WINDOW"); text != "" {
		var err error
		window, err = time.ParseDuration(text)
		require.NoError(t, err, "SQSWORKER_SCHEDULER_WINDOW")
		require.GreaterOrEqual(t, window, 30*time.Second, "SQSWORKER_SCHEDULER_WINDOW must be at least 30s")
	}
	const (
		period = 2 * time.Second
		lease  = 3 * time.Second
		pause  = lease + 4*time.Second
		// stall bounds each wait: the emulator's DynamoDB serves one request at a time to
		// every test running, and has been seen to stall for 20 s under load (the replicas
		// then time out, lose the lease and catch up afterwards, as they would on AWS).
		stall = time.Minute
	)
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	definitions := fmt.Sprintf(`{"schedules": [{"name": "every-2s", "cron": "@every 2s", "job_type": "tick",
		"payload": {"report": "heartbeat"}, "queue": %q, "catch_up": 100}]}`, queue.URL)
	file := filepath.Join(t.TempDir(), "schedules.json")
	require.NoError(t, os.WriteFile(file, []byte(definitions), 0o600))

	// The consumer the README wires: the idempotency middleware keyed by the tick id.
	consumer := startTickConsumer(t, sqsClient, dynamo, table, queue.URL, "tick")

	replicas := &replicaSet{
		t: t, binary: buildReplica(t), procs: map[string]*exec.Cmd{}, exited: map[string]chan struct{}{},
		args: []string{"-schedules", file, "-table", table, "-lease", lease.String(), "-renew", "1s"},
	}
	t.Cleanup(func() {
		for name := range replicas.procs {
			_ = replicas.procs[name].Process.Kill()
		}
	})
	begin := time.Now()
	for range 3 {
		replicas.start()
	}
	at := func(fraction float64) { // waits until that fraction of the window has passed
		time.Sleep(time.Until(begin.Add(time.Duration(fraction * float64(window)))))
	}
	waitLeader := func() (string, int64) {
		var name string
		var token int64
		testenv.Eventually(t, stall, "a leader enqueuing ticks", func() bool {
			var ok bool
			name, token, ok = replicas.leader()
			return ok
		})
		return name, token
	}
	var failovers []time.Duration
	failover := func(from time.Time, old string) {
		var next replicaLine
		testenv.Eventually(t, stall, "a tick enqueued by another replica after "+old+" stopped", func() bool {
			var ok bool
			next, ok = replicas.firstEnqueueAfter(from, old)
			return ok
		})
		failovers = append(failovers, next.Time.Sub(from))
		t.Logf("failover: %s stopped at %s; %s enqueued %s at %s (%s later)",
			old, from.Format(time.StampMilli), next.Owner, next.TickID, next.Time.Format(time.StampMilli), next.Time.Sub(from).Round(time.Millisecond))
	}

	for _, fraction := range []float64{0.2, 0.4} {
		at(fraction)
		leader, _ := waitLeader()
		killed := time.Now()
		replicas.kill(leader)
		failover(killed, leader)
		replicas.start()
	}

	at(0.6)
	paused, pausedToken := waitLeader()
	replicas.signal(paused, syscall.SIGSTOP)
	stopped := time.Now()
	failover(stopped, paused)
	time.Sleep(time.Until(stopped.Add(pause)))
	replicas.signal(paused, syscall.SIGCONT)
	resumed := time.Now()
	testenv.Eventually(t, stall, paused+" reporting the loss of its lease after SIGCONT", func() bool {
		for _, line := range replicas.snapshot() {
			if line.Owner == paused && line.Kind == "leadership-lost" && line.Token == pausedToken {
				return true
			}
		}
		return false
	})

	at(1)
	windowEnd := time.Now()
	testenv.Eventually(t, stall, "the ticks due by the end of the window enqueued", func() bool {
		for _, line := range replicas.snapshot() {
			if line.Kind == "tick-enqueued" && line.TickID >= "every-2s/"+windowEnd.Add(-period).UTC().Format(time.RFC3339) {
				return true
			}
		}
		return false
	})
	replicas.stopAll()
	lines := replicas.snapshot()

	// Every tick from the first to the last was enqueued, and no tick twice.
	enqueued := map[string]int{}
	var ticks []time.Time
	var gained []int64
	for _, line := range lines {
		switch line.Kind {
		case "tick-enqueued":
			enqueued[line.TickID]++
			tick, err := time.Parse(time.RFC3339, line.TickID[len("every-2s/"):])
			require.NoError(t, err)
			ticks = append(ticks, tick)
		case "ticks-skipped":
			t.Errorf("%s skipped %d ticks from %s: catch_up 100 should cover every failover", line.Owner, line.Skipped, line.TickID)
		case "leadership-gained":
			gained = append(gained, line.Token)
		case "tick-claimed":
			tick, err := time.Parse(time.RFC3339, line.TickID[len("every-2s/"):])
			require.NoError(t, err)
			if line.Owner == paused && tick.After(stopped) {
				t.Errorf("%s, paused at %s, claimed tick %s with token %d: the fence should refuse it", paused, stopped.Format(time.StampMilli), line.TickID, line.Token)
			}
		}
		if line.Owner == paused && line.Time.After(resumed) && line.Kind == "tick-enqueued" {
			tick, _ := time.Parse(time.RFC3339, line.TickID[len("every-2s/"):])
			assert.False(t, tick.After(stopped), "%s enqueued %s after waking: only a tick it claimed before its pause may be sent", paused, line.TickID)
		}
	}
	require.NotEmpty(t, ticks)
	slices.SortFunc(ticks, func(a, b time.Time) int { return a.Compare(b) })
	first, last := ticks[0], ticks[len(ticks)-1]
	var want []string
	for tick := first; !tick.After(last); tick = tick.Add(period) {
		want = append(want, "every-2s/"+tick.Format(time.RFC3339))
	}
	// A tick may have no tick-enqueued line: the paused leader's UpdateItem that records it
	// as enqueued reached DynamoDB before the SIGSTOP, and its answer was read only after
	// SIGCONT, past the call's deadline. DynamoDB holds the record, so the next leader
	// goes on after it, and the paused one reports the recording as failed before it
	// learns it lost the lease. Such a tick must still be handled exactly once (below).
	recordedWhilePaused := map[string]bool{}
	for _, line := range lines {
		if line.Owner == paused && line.Kind == "tick-failed" && line.Time.After(resumed) {
			recordedWhilePaused[line.TickID] = true
		}
	}
	for _, id := range want {
		if enqueued[id] == 0 && recordedWhilePaused[id] {
			t.Logf("tick %s: recorded by %s before its pause, its answer read after it", id, paused)
			continue
		}
		assert.Equal(t, 1, enqueued[id], "tick %s enqueued events", id)
	}
	for id := range enqueued {
		assert.Contains(t, want, id, "no tick outside the window")
	}
	assert.True(t, slices.IsSorted(gained) && len(slices.Compact(slices.Clone(gained))) == len(gained),
		"fencing tokens grow at every takeover: %v", gained)
	assert.GreaterOrEqual(t, len(gained), 4, "three takeovers after the first leader: %v", gained)

	// The consumer ran each tick's handler exactly once, and the queue is empty. A tick
	// has one message, or two when the leader that sent it was killed before recording
	// it and the next leader sent it again (its tick-enqueued line says attempt 2).
	consumer.drained(t, sqsClient, queue.URL, len(want))
	attempts := map[string]int{}
	for _, line := range lines {
		if line.Kind == "tick-enqueued" {
			attempts[line.TickID] = line.Attempt
		}
	}
	handled, delivered := consumer.counts()
	resent := 0
	for _, id := range want {
		assert.Equal(t, 1, handled[id], "tick %s handled", id)
		if attempts[id] > 1 {
			resent++
			assert.LessOrEqual(t, delivered[id], attempts[id], "messages for tick %s, sent %d times", id, attempts[id])
		} else {
			assert.Equal(t, 1, delivered[id], "messages for tick %s, sent once", id)
		}
	}
	assert.Len(t, handled, len(want), "the consumer handled only the window's ticks")
	t.Logf("%d ticks from %s to %s, each enqueued and handled once (%d sent again after a kill); failovers %v; tokens %v",
		len(want), first.Format(time.TimeOnly), last.Format(time.TimeOnly), resent, failovers, gained)
}

// lineOf returns the first line of kind from owner for tick id (any tick when empty).
func (r *replicaSet) lineOf(owner, kind, tickID string) (replicaLine, bool) {
	for _, line := range r.snapshot() {
		if line.Owner == owner && line.Kind == kind && (tickID == "" || line.TickID == tickID) {
			return line, true
		}
	}
	return replicaLine{}, false
}

// The leader is SIGKILLed after SQS accepted a tick's message and before the send was
// recorded (its DynamoDB goes through a fault proxy that fails the UpdateItem recording
// it, and before the fix the one confirming the unique key too). The standby takes over
// after the lease lapses and sends the tick again at once: a standard queue holds two
// copies, a FIFO queue one (the same deduplication id within 5 minutes), and the README's
// consumer (the idempotency middleware) runs every tick's handler exactly once. No tick
// after the kill waits longer than the takeover (LeaseDuration + RenewInterval, plus the
// measured DynamoDB round trips): before the fix the standby waited UniquePending (60 s)
// for the dead leader's unconfirmed unique key, then sent a second copy, and every later
// tick waited behind it.
func TestReplicaKilledAfterSendingBeforeRecordingRunsTheTickOnce(t *testing.T) {
	t.Parallel()
	binary := buildReplica(t)
	for _, fifo := range []bool{false, true} {
		name := map[bool]string{false: "standard", true: "FIFO"}[fifo]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const (
				period = 2 * time.Second
				lease  = 3 * time.Second
				renew  = time.Second
				stall  = 2 * time.Minute // bounds each wait (the emulator serves one request at a time)
			)
			sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
			queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{FIFO: fifo})
			table := testenv.NewTable(t, dynamo)
			definitions := fmt.Sprintf(`{"schedules": [{"name": "every-2s", "cron": "@every 2s", "job_type": "tick", "queue": %q, "catch_up": 100}]}`, queue.URL)
			file := filepath.Join(t.TempDir(), "schedules.json")
			require.NoError(t, os.WriteFile(file, []byte(definitions), 0o600))
			consumer := startTickConsumer(t, sqsClient, dynamo, table, queue.URL, "tick")

			proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"))
			proxy.SetRules(faultproxy.Rule{ // the record of a send (and the old unique key's confirmation)
				Operations: []string{"UpdateItem"}, RequestContains: "#message = :message", Fraction: 1,
				Status: http.StatusInternalServerError, Code: "InternalServerError", Message: "the test refuses to record sends",
			})
			replicas := &replicaSet{
				t: t, binary: binary, procs: map[string]*exec.Cmd{}, exited: map[string]chan struct{}{},
				args: []string{"-schedules", file, "-table", table, "-lease", lease.String(), "-renew", renew.String()},
			}
			t.Cleanup(func() {
				for name := range replicas.procs {
					_ = replicas.procs[name].Process.Kill()
				}
			})
			doomed := replicas.start("AWS_ENDPOINT_URL_DYNAMODB=" + proxy.URL)
			var claimed replicaLine
			testenv.Eventually(t, stall, doomed+" claiming a tick", func() bool {
				var ok bool
				claimed, ok = replicas.lineOf(doomed, "tick-claimed", "")
				return ok
			})
			standby := replicas.start()
			testenv.Eventually(t, stall, "the standby started", func() bool {
				_, ok := replicas.lineOf(standby, "started", "")
				return ok
			})
			testenv.Eventually(t, stall, "the tick's message delivered and its record refused", func() bool {
				_, delivered := consumer.counts()
				_, refused := replicas.lineOf(doomed, "tick-failed", claimed.TickID)
				return delivered[claimed.TickID] == 1 && refused
			})
			replicas.kill(doomed)
			killed := time.Now()
			var slowest time.Duration // the DynamoDB round trip now, for the bound below
			for range 5 {
				begin := time.Now()
				_, err := dynamo.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table),
					Key: map[string]dynamodbtypes.AttributeValue{"id": &dynamodbtypes.AttributeValueMemberS{Value: "probe"}}})
				require.NoError(t, err)
				slowest = max(slowest, time.Since(begin))
			}
			after := killed.Add(3 * period)
			testenv.Eventually(t, stall, "the standby enqueuing the ticks after the kill", func() bool {
				line, ok := replicas.firstEnqueueAfter(after, doomed)
				return ok && line.Owner == standby
			})
			replicas.stopAll()
			lines := replicas.snapshot()

			resent, ok := replicas.lineOf(standby, "tick-enqueued", claimed.TickID)
			require.True(t, ok, "the standby recorded the dead leader's tick %s", claimed.TickID)
			assert.Equal(t, 2, resent.Attempt, "sent a second time")
			bound := lease + renew + max(2*time.Second, 10*slowest)
			var ids []string
			for _, line := range lines {
				if line.Kind != "tick-enqueued" {
					continue
				}
				ids = append(ids, line.TickID)
				tick, err := time.Parse(time.RFC3339, line.TickID[len("every-2s/"):])
				require.NoError(t, err)
				if line.Owner == standby {
					delay := line.Time.Sub(maxTime(tick, killed))
					assert.Less(t, delay, bound, "tick %s enqueued %s after the kill or its time (the takeover bound is %s)", line.TickID, delay, bound)
				}
			}
			consumer.drained(t, sqsClient, queue.URL, len(ids))
			runs, delivered := consumer.counts()
			for _, id := range ids {
				assert.Equal(t, 1, runs[id], "handler runs of tick %s", id)
			}
			wantCopies := 2
			if fifo {
				wantCopies = 1
			}
			assert.Equal(t, wantCopies, delivered[claimed.TickID], "messages of tick %s", claimed.TickID)
			t.Logf("%s: killed %s after it sent %s; %s took over, sent it again (attempt %d) at %s; %d ticks, each handled once; bound %s",
				name, doomed, claimed.TickID, standby, resent.Attempt, resent.Time.Sub(killed).Round(time.Millisecond), len(ids), bound)
		})
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
