package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/poller"
)

// The doomed worker: this test binary, started again with workerProcessVariable set. It
// runs a real poller with the idempotency middleware whose handler announces itself on
// stdout and then hangs, so the test can SIGKILL it mid-handler.
const (
	workerProcessVariable = "SQSWORKER_E2E_WORKER"
	workerQueueVariable   = "SQSWORKER_E2E_QUEUE_URL"
	workerTableVariable   = "SQSWORKER_E2E_TABLE"
	workerKeyVariable     = "SQSWORKER_E2E_KEY_FIELD"
	workerTimeoutVariable = "SQSWORKER_E2E_HANDLER_TIMEOUT"
	startedLine           = "handler started"
)

func runWorkerProcess() int {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	handlerTimeout, err := time.ParseDuration(os.Getenv(workerTimeoutVariable))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	hang := sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		fmt.Printf("%s receive_count=%d\n", startedLine, message.ReceiveCount)
		<-ctx.Done()
		select {} // a hung handler: only SIGKILL ends it
	})
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), os.Getenv(workerTableVariable))
	handler := sqsworker.Chain(hang, idempotency.Middleware(store, idempotency.Config{
		KeyFunc: idempotency.KeyFromJSONField(os.Getenv(workerKeyVariable)),
	}))
	server, err := poller.New(sqs.NewFromConfig(cfg), poller.Config{
		QueueURL:       os.Getenv(workerQueueVariable),
		HandlerTimeout: handlerTimeout,
		// A killed process's long poll lives on in SQS until its wait ends and takes any
		// message that becomes visible meanwhile (one more receive, invisible for another
		// visibility timeout). A 2 s wait ends long before the 10 s visibility timeout,
		// so the case's exact receive count holds.
		WaitTime: 2 * time.Second,
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}, handler)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := server.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// doomedWorker is a worker process started by startDoomedWorker.
type doomedWorker struct {
	command *exec.Cmd
	started chan string
}

// startDoomedWorker starts the hanging worker process on queueURL and table, and kills it
// when the test ends if the test has not.
func startDoomedWorker(t *testing.T, queueURL, table, keyField string, handlerTimeout time.Duration) *doomedWorker {
	t.Helper()
	command := exec.Command(os.Args[0], "-test.run=^$")
	command.Env = append(os.Environ(),
		workerProcessVariable+"=1",
		workerQueueVariable+"="+queueURL,
		workerTableVariable+"="+table,
		workerKeyVariable+"="+keyField,
		workerTimeoutVariable+"="+handlerTimeout.String(),
	)
	command.Stderr = io.Discard
	if testing.Verbose() {
		command.Stderr = os.Stderr
	}
	stdout, err := command.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, command.Start())
	worker := &doomedWorker{command: command, started: make(chan string, 1)}
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			if strings.HasPrefix(scanner.Text(), startedLine) {
				worker.started <- scanner.Text()
			}
		}
	}()
	t.Cleanup(func() {
		_ = command.Process.Kill()
		_ = command.Wait()
	})
	return worker
}

// awaitHandler waits until the worker's handler has started and returns its line.
func (w *doomedWorker) awaitHandler(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case line := <-w.started:
		return line
	case <-time.After(timeout):
		t.Fatalf("the worker process did not start its handler within %s", timeout)
		return ""
	}
}

// kill sends SIGKILL and waits for the process to end.
func (w *doomedWorker) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, w.command.Process.Signal(syscall.SIGKILL))
	err := w.command.Wait()
	var exitError *exec.ExitError
	require.ErrorAs(t, err, &exitError)
	require.Equal(t, "signal: killed", exitError.Error())
}
