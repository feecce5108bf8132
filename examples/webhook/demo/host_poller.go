package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pollerHost runs the worker as long-poll worker processes, as ECS runs its containers:
// options.Workers of them, checked with `webhook healthcheck`; the crash is a SIGKILL of
// the first, and the survivors are stopped with SIGTERM and must drain and exit 0.
type pollerHost struct {
	binary  string
	workers []*worker
	killed  *worker
	drain   time.Duration
	printf  func(format string, args ...any)
}

func (h *pollerHost) unit() string { return "worker" }

func (h *pollerHost) build(ctx context.Context, root, logDir string) error {
	h.binary = filepath.Join(logDir, "webhook")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	build := exec.CommandContext(ctx, goTool, "build", "-o", h.binary, "./examples/webhook")
	build.Dir = root
	if output, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("demo: go build ./examples/webhook: %w\n%s", err, output)
	}
	return nil
}

func (h *pollerHost) start(ctx context.Context, s setup) error {
	o := s.options
	h.drain, h.printf = o.DrainTimeout, s.printf
	// The AWS_* settings are inherited; SQSWORKER_* ones only from here, so a variable set
	// in the shell (SQSWORKER_QUEUE_NAME, say) cannot redirect or break the workers.
	env := slices.DeleteFunc(os.Environ(), func(variable string) bool { return strings.HasPrefix(variable, "SQSWORKER_") })
	env = append(env, workerSettings(o, s.table)...)
	env = append(env,
		"SQSWORKER_METRICS=prometheus", // GET /metrics on the health address
		"SQSWORKER_QUEUE_URL="+s.queueURL,
		"SQSWORKER_CONCURRENCY="+strconv.Itoa(o.Concurrency),
		"SQSWORKER_HANDLER_TIMEOUT="+o.HandlerTimeout.String(),
		"SQSWORKER_DRAIN_TIMEOUT="+o.DrainTimeout.String(),
	)
	for i := range o.Workers {
		healthAddress, err := freeAddress()
		if err != nil {
			return err
		}
		workerEnv := append(slices.Clip(env), "SQSWORKER_HEALTH_ADDRESS="+healthAddress)
		w, err := startWorker(h.binary, workerEnv, filepath.Join(s.logDir, fmt.Sprintf("worker-%d.log", i+1)), healthAddress)
		if err != nil {
			return err
		}
		w.number = i + 1
		h.workers = append(h.workers, w)
	}
	s.printf("started %d workers (concurrency %d, handler timeout %s, drain %s); logs in %s",
		len(h.workers), o.Concurrency, o.HandlerTimeout, o.DrainTimeout, s.logDir)
	for _, w := range h.workers {
		s.printf("worker %d (pid %d) serves its metrics at %s (curl -s it during the run)", w.number, w.pid, metricsURL(w.healthAddress))
	}
	// `webhook healthcheck`, as the container's health check runs it, until each answers.
	for _, w := range h.workers {
		if err := poll(ctx, 100*time.Millisecond, func() (bool, error) {
			check := exec.CommandContext(ctx, h.binary, "healthcheck", w.healthAddress)
			return check.Run() == nil, h.check()
		}); err != nil {
			return fmt.Errorf("demo: waiting for worker pid %d to report healthy: %w", w.pid, err)
		}
	}
	s.printf("all %d workers report healthy (webhook healthcheck exit 0)", len(h.workers))
	return nil
}

func (h *pollerHost) check() error {
	for _, w := range h.workers {
		if w != h.killed && w.exited() {
			return fmt.Errorf("demo: worker pid %d exited early with code %d; see %s", w.pid, w.cmd.ProcessState.ExitCode(), w.logPath)
		}
	}
	return nil
}

func (h *pollerHost) crash(context.Context) (crash, error) {
	h.killed = h.workers[0]
	h.killed.kill()
	return crash{description: fmt.Sprintf("SIGKILLed worker 1 (pid %d)", h.killed.pid)}, nil
}

// stop scrapes the metrics of every survivor once and prints them, then sends it SIGTERM;
// it must drain and exit 0.
func (h *pollerHost) stop() error {
	var stopErrors []error
	for _, w := range h.workers {
		if w == h.killed {
			continue
		}
		url := metricsURL(w.healthAddress)
		if metrics, err := scrapeMetrics(context.Background(), url); err != nil {
			stopErrors = append(stopErrors, err)
		} else {
			h.printf("metrics of worker %d (%s): %s", w.number, url, metrics)
		}
		stopping := time.Now()
		code, err := w.stop(h.drain + 20*time.Second)
		switch {
		case err != nil:
			stopErrors = append(stopErrors, err)
		case code != 0:
			stopErrors = append(stopErrors, fmt.Errorf("demo: worker pid %d exited with code %d after SIGTERM; see %s", w.pid, code, w.logPath))
		default:
			h.printf("worker pid %d drained and exited 0 after SIGTERM (in %s)", w.pid, since(stopping))
		}
	}
	return errors.Join(stopErrors...)
}

func (h *pollerHost) logPaths() []string {
	paths := make([]string, len(h.workers))
	for i, w := range h.workers {
		paths[i] = w.logPath
	}
	return paths
}

func (h *pollerHost) close() {
	for _, w := range h.workers {
		w.kill()
	}
}

// worker is one worker process.
type worker struct {
	number        int // 1, 2, ... in start order
	pid           int
	logPath       string
	healthAddress string
	cmd           *exec.Cmd
	done          chan struct{} // closed when the process has exited
}

// freeAddress returns a 127.0.0.1 address with a port that was free a moment ago.
func freeAddress() (string, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("demo: finding a free port: %w", err)
	}
	defer listener.Close()
	return listener.Addr().String(), nil
}

func startWorker(binary string, env []string, logPath, healthAddress string) (*worker, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	cmd := exec.Command(binary)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = workerProcessAttributes()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("demo: starting the worker: %w", err)
	}
	w := &worker{pid: cmd.Process.Pid, logPath: logPath, healthAddress: healthAddress, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(w.done)
	}()
	return w, nil
}

func (w *worker) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process to be gone (its sockets closed).
func (w *worker) kill() {
	if w.exited() {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
}

// stop sends SIGTERM and waits up to timeout for the exit code; then it kills.
func (w *worker) stop(timeout time.Duration) (int, error) {
	if w.exited() {
		return w.cmd.ProcessState.ExitCode(), nil
	}
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return -1, fmt.Errorf("demo: SIGTERM to worker pid %d: %w", w.pid, err)
	}
	select {
	case <-w.done:
		return w.cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		w.kill()
		return -1, fmt.Errorf("demo: worker pid %d did not exit within %s of SIGTERM; killed it (see %s)", w.pid, timeout, w.logPath)
	}
}
