package saga_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/examples/saga"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/sfntest"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/tasktoken"
)

// The doomed worker is this test binary started again with envDoomedStep set: a saga
// worker that runs every step until the one named, applies that step's effect, says so on
// stdout and hangs before the task is answered or the message deleted, until SIGKILL.
const (
	envDoomedStep     = "SAGA_TEST_DOOMED_STEP"
	envQueueURL       = "SAGA_TEST_QUEUE_URL"
	envEffectsTable   = "SAGA_TEST_EFFECTS_TABLE"
	envRecordsTable   = "SAGA_TEST_IDEMPOTENCY_TABLE"
	doomedReadyPrefix = "saga doomed worker: effect applied, task not answered:"
)

// The kill test's timings. A message whose worker died comes back VisibilityExtension
// after the worker's last visibility heartbeat (at most heartbeatInterval before the kill),
// so at least visibility - heartbeatInterval (4 s) after the kill; by then the dead
// worker's idempotency lease (renewed every leaseTTL/3) has ended, leaseTTL + leaseSkew
// (2.5 s) after its last renewal at the latest, and the second worker takes the record
// over at its first receive: receive count 2, no deferral.
const (
	visibility        = 5 * time.Second
	heartbeatInterval = time.Second
	leaseTTL          = 2 * time.Second
	leaseSkew         = 500 * time.Millisecond // one machine, one clock
	// killedStepHeartbeatSeconds is the killed step's HeartbeatSeconds (see
	// withHeartbeat): far above the kill-to-answer time (about 5 s), so the state does
	// not time out in a good run.
	killedStepHeartbeatSeconds = 60
)

func TestMain(m *testing.M) {
	if step := os.Getenv(envDoomedStep); step != "" {
		os.Exit(runDoomedWorker(step))
	}
	os.Exit(m.Run())
}

// sagaWorker is the handler chain of both workers: idempotency (key: the message id, so
// a state machine's retry of a step, a new message with a new token, is answered too)
// around the task-token middleware around the saga's handler (and inner, if given).
func sagaWorker(states tasktoken.API, queues *sqs.Client, tables *dynamodb.Client, effectsTable, recordsTable string, logger *slog.Logger, inner ...sqsworker.Middleware) (sqsworker.Handler, error) {
	answer, err := tasktoken.New(tasktoken.Config{API: states, Token: tasktoken.BodyField("taskToken"), Queues: queues, Logger: logger})
	if err != nil {
		return nil, err
	}
	records := idempotency.Middleware(idempotency.NewDynamoDBStore(tables, recordsTable), idempotency.Config{
		KeyFunc:            idempotency.KeyFromMessageID,
		KeyPrefix:          "saga",
		InProgressTTL:      leaseTTL,
		ClockSkewAllowance: leaseSkew,
		Logger:             logger,
	})
	middlewares := append([]sqsworker.Middleware{records, answer}, inner...)
	return sqsworker.Chain(saga.Handler(saga.NewDynamoDBLedger(tables, effectsTable)), middlewares...), nil
}

// pollerConfig is both workers' poller configuration: a short visibility, so a dead
// worker's message comes back within seconds.
func pollerConfig(queueURL string, logger *slog.Logger) poller.Config {
	return poller.Config{
		QueueURL:            queueURL,
		WaitTime:            time.Second, // a killed worker's long poll ends long before its message returns
		HandlerTimeout:      30 * time.Second,
		ReceiveVisibility:   visibility,
		VisibilityExtension: visibility,
		HeartbeatInterval:   heartbeatInterval,
		Logger:              logger,
	}
}

// hangAfter returns the doomed worker's innermost middleware: once step's handler has
// returned nil (its effect applied, its output set), it writes the ready line and hangs,
// so the task-token middleware never answers and the poller never deletes.
func hangAfter(step string) sqsworker.Middleware {
	return func(next sqsworker.Handler) sqsworker.Handler {
		return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
			err := next.Handle(ctx, message)
			if err == nil && stepOf(message) == step {
				fmt.Printf("%s message_id=%s receive_count=%d\n", doomedReadyPrefix, message.ID, message.ReceiveCount)
				select {} // only SIGKILL ends it
			}
			return err
		})
	}
}

func runDoomedWorker(step string) int {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		logger.Error("doomed worker: loading the AWS config", "error", err)
		return 2
	}
	queues := sqs.NewFromConfig(cfg)
	handler, err := sagaWorker(sfn.NewFromConfig(cfg), queues, dynamodb.NewFromConfig(cfg), os.Getenv(envEffectsTable), os.Getenv(envRecordsTable), logger, hangAfter(step))
	if err != nil {
		logger.Error("doomed worker", "error", err)
		return 2
	}
	server, err := poller.New(queues, pollerConfig(os.Getenv(envQueueURL), logger), handler)
	if err != nil {
		logger.Error("doomed worker", "error", err)
		return 2
	}
	if err := server.Run(ctx); err != nil {
		logger.Error("doomed worker: the poller stopped", "error", err)
		return 1
	}
	return 1 // it must not stop before the kill
}

// stepOf reads a message body's "type" (the saga step), or "".
func stepOf(message *sqsworker.Message) string {
	var job struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(message.Body), &job)
	return job.Type
}

// withHeartbeat sets HeartbeatSeconds on the state of step. LocalStack answers
// SendTaskHeartbeat with InvalidToken for a state without it (AWS accepts a heartbeat for
// any open task; localstack/README.md), and the task-token middleware sends one before
// running a redelivered job: without it, the redelivery would find the task "closed" and
// finish the message without answering, and the execution would wait forever. Only the
// killed step gets it: LocalStack loses a fast answer on a state that has it, and the
// killed step is answered seconds after its message was sent.
func withHeartbeat(definition map[string]any, step string) map[string]any {
	state := definition["States"].(map[string]any)[strings.ToUpper(step[:1])+step[1:]].(map[string]any)
	state["HeartbeatSeconds"] = killedStepHeartbeatSeconds
	return definition
}

// delivery is one handler call of the second worker.
type delivery struct {
	step         string
	messageID    string
	receiveCount int
	err          error
}

// deliveries records the second worker's handler calls.
type deliveries struct {
	mu   sync.Mutex
	list []delivery
}

func (d *deliveries) middleware(next sqsworker.Handler) sqsworker.Handler {
	return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		err := next.Handle(ctx, message)
		d.mu.Lock()
		defer d.mu.Unlock()
		d.list = append(d.list, delivery{stepOf(message), message.ID, message.ReceiveCount, err})
		return err
	})
}

func (d *deliveries) all() []delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]delivery(nil), d.list...)
}

// A worker is SIGKILLed mid-step at the worst moment: the step's effect applied, its task
// not answered, its message not deleted. Its message comes back after the visibility
// timeout; a second worker takes the dead worker's idempotency record over once its lease
// has ended, runs the step again (the effect's key makes the repeat a no-op), answers the
// task, and the saga ends as it would have without the kill: every effect once, every
// message deleted, nothing dead-lettered, the killed step's message received twice.
func TestSagaSurvivesAWorkerKilledMidStepOnEmulator(t *testing.T) {
	states := sfntest.Require(t)
	cases := []struct {
		name, fail, kill string
		status           sfntypes.ExecutionStatus
		entered          []string
		effects          []string // in order; the killed step's is called twice
	}{
		{"happy path, killed in reserve", "", "reserve", sfntypes.ExecutionStatusSucceeded,
			[]string{"Charge", "Reserve", "Ship", "Shipped"}, []string{"charge", "reserve", "ship"}},
		{"ship fails, killed in the refund", "ship", "refund", sfntypes.ExecutionStatusFailed,
			[]string{"Charge", "Reserve", "Ship", "Release", "Refund", "OrderFailed"}, []string{"charge", "reserve", "release", "refund"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			queues, tables := testenv.SQS(t), testenv.DynamoDB(t)
			queue := testenv.NewQueue(t, queues, testenv.QueueOptions{VisibilityTimeout: visibility, MaxReceiveCount: 5})
			effectsTable, recordsTable := testenv.NewTable(t, tables), testenv.NewTable(t, tables)
			ledger := saga.NewDynamoDBLedger(tables, effectsTable)
			machine := sfntest.NewStateMachine(t, states, withHeartbeat(saga.Definition(sfntest.Target(t, queue)), tc.kill))
			order := "order-kill-" + tc.kill

			doomed := startDoomedWorker(t, tc.kill, queue.URL, effectsTable, recordsTable)
			execution := sfntest.Start(t, states, machine, map[string]string{"order": order, "fail": tc.fail})
			ready := doomed.awaitReady(t, 90*time.Second)
			require.Contains(t, ready, "receive_count=1")
			killedID := strings.TrimSuffix(strings.TrimPrefix(ready, doomedReadyPrefix+" message_id="), " receive_count=1")
			killedKey := order + "/" + tc.kill

			// Before the kill: the step's effect is in the ledger, called once; its message
			// is the only one in the queue, in flight (the earlier steps' deletes are flushed).
			applied, err := ledger.Effects(context.Background())
			require.NoError(t, err)
			require.NotEmpty(t, applied)
			require.Equal(t, saga.Effect{Key: killedKey, Effect: tc.kill + " " + order, Calls: 1}, withoutTime(applied[len(applied)-1]))
			testenv.Eventually(t, 10*time.Second, "only the killed step's message left, in flight", func() bool {
				visible, inFlight := testenv.Counts(t, queues, queue.URL)
				return visible == 0 && inFlight == 1
			})
			records := idempotency.NewDynamoDBStore(tables, recordsTable)
			recordKey, err := idempotency.StoredKey("saga", killedID)
			require.NoError(t, err)
			record, err := records.Get(context.Background(), recordKey)
			require.NoError(t, err)
			require.Equal(t, idempotency.StatusInProgress, record.Status, "the doomed worker holds the step's idempotency lease")
			doomed.kill(t)

			logs := &lockedWriter{}
			logger := slog.New(slog.NewTextHandler(logs, nil))
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("second worker's log:\n%s", logs.String())
				}
			})
			calls := &deliveries{}
			handler, err := sagaWorker(states, queues, tables, effectsTable, recordsTable, logger)
			require.NoError(t, err)
			server, err := poller.New(queues, pollerConfig(queue.URL, logger), calls.middleware(handler))
			require.NoError(t, err)
			require.NoError(t, server.Start(context.Background()))
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = server.Shutdown(ctx)
			})

			done := sfntest.Finished(t, states, execution, 90*time.Second)
			require.Equal(t, tc.status, done.Status, "execution error %q, cause %q", aws.ToString(done.Error), aws.ToString(done.Cause))
			if tc.status == sfntypes.ExecutionStatusFailed {
				require.Equal(t, "OrderFailed", aws.ToString(done.Error))
			}
			assert.Equal(t, tc.entered, sfntest.EnteredStates(t, states, execution))
			var answered int
			for _, event := range sfntest.History(t, states, execution) {
				switch event.Type {
				case sfntypes.HistoryEventTypeTaskSucceeded, sfntypes.HistoryEventTypeTaskFailed:
					answered++
				case sfntypes.HistoryEventTypeTaskTimedOut:
					t.Errorf("a task timed out: %+v", event)
				}
			}
			assert.Equal(t, len(tc.entered)-1, answered, "every Task state answered once")

			var want []saga.Effect
			for _, step := range tc.effects {
				calls := 1
				if step == tc.kill {
					calls = 2
				}
				want = append(want, saga.Effect{Key: order + "/" + step, Effect: step + " " + order, Calls: calls})
			}
			applied, err = ledger.Effects(context.Background())
			require.NoError(t, err)
			var got []saga.Effect
			for _, effect := range applied {
				got = append(got, withoutTime(effect))
			}
			assert.Equal(t, want, got, "every effect once; the killed step's key called twice")

			// The second worker ran the killed step's message on its second receive, and
			// the steps after it on their first, and deleted each.
			taken := len(tc.effects) - slices.Index(tc.effects, tc.kill)
			testenv.WaitQueueEmpty(t, queues, queue.URL, 30*time.Second)
			testenv.Eventually(t, 10*time.Second, "the second worker deleted each message it took", func() bool {
				return server.Stats().Deleted == int64(taken)
			})
			var killedDeliveries []delivery
			for _, call := range calls.all() {
				require.NoError(t, call.err, "step %s", call.step)
				if call.step == tc.kill {
					killedDeliveries = append(killedDeliveries, call)
				} else {
					assert.Equal(t, 1, call.receiveCount, "step %s after the kill, received once", call.step)
				}
			}
			assert.Len(t, calls.all(), taken, "the second worker's handler calls")
			assert.Equal(t, []delivery{{tc.kill, killedID, 2, nil}}, killedDeliveries, "the killed step's message, once more, on its second receive")
			record, err = records.Get(context.Background(), recordKey)
			require.NoError(t, err)
			assert.Equal(t, idempotency.StatusCompleted, record.Status, "the second worker took the dead worker's record over and completed it")
			stats := server.Stats()
			assert.Equal(t, int64(0), stats.Failed+stats.Deferred+stats.DeadLettered, "no failure, deferral or dead letter: %+v", stats.Stats)
			visible, inFlight := testenv.Counts(t, queues, queue.DeadLetterQueueURL)
			assert.Equal(t, [2]int{0, 0}, [2]int{visible, inFlight}, "nothing in the dead-letter queue")
		})
	}
}

func withoutTime(effect saga.Effect) saga.Effect {
	effect.AppliedAt = time.Time{}
	return effect
}

// doomedWorker is the worker process started by startDoomedWorker.
type doomedWorker struct {
	command *exec.Cmd
	stderr  *os.File
	ready   chan string
	killed  bool
}

// startDoomedWorker starts the doomed worker for step; it is killed when the test ends if
// the test has not killed it.
func startDoomedWorker(t *testing.T, step, queueURL, effectsTable, recordsTable string) *doomedWorker {
	t.Helper()
	stderr, err := os.CreateTemp(t.TempDir(), "doomed-stderr")
	require.NoError(t, err)
	command := exec.Command(os.Args[0], "-test.run=^$")
	command.Env = append(os.Environ(),
		envDoomedStep+"="+step,
		envQueueURL+"="+queueURL,
		envEffectsTable+"="+effectsTable,
		envRecordsTable+"="+recordsTable,
	)
	command.Stderr = stderr
	stdout, err := command.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, command.Start())
	worker := &doomedWorker{command: command, stderr: stderr, ready: make(chan string, 1)}
	go func() { // ends when the process's stdout closes (its exit)
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), doomedReadyPrefix) {
				worker.ready <- lines.Text()
			}
		}
	}()
	t.Cleanup(func() {
		if !worker.killed {
			_ = command.Process.Kill()
			_ = command.Wait()
		}
		_ = stderr.Close()
	})
	return worker
}

// awaitReady returns the worker's ready line, or fails the test after timeout.
func (w *doomedWorker) awaitReady(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case line := <-w.ready:
		return line
	case <-time.After(timeout):
		t.Fatalf("the doomed worker did not reach its step within %s; its stderr:\n%s", timeout, w.output())
		return ""
	}
}

// kill SIGKILLs the worker and checks it died of it.
func (w *doomedWorker) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, w.command.Process.Kill())
	w.killed = true
	err := w.command.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL, "killed by SIGKILL: %v; stderr:\n%s", err, w.output())
}

func (w *doomedWorker) output() string {
	text, _ := os.ReadFile(w.stderr.Name())
	return string(text)
}

// lockedWriter keeps the second worker's log, written by its goroutines.
type lockedWriter struct {
	mu   sync.Mutex
	text strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.String()
}
