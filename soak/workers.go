package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// fleet supervises the worker processes: it starts them, SIGKILLs or SIGTERMs one on
// request and restarts it, notices exits nobody asked for, and samples every live
// worker's resident memory.
type fleet struct {
	binary string
	env    []string
	logDir string

	mu         sync.Mutex
	workers    []*process
	kills      []signalEvent
	terms      []signalEvent
	unexpected []string
	samples    []rssSample
	stopping   bool
	stopSample chan struct{}
	sampled    sync.WaitGroup
}

type process struct {
	slot     int
	cmd      *exec.Cmd
	pid      int
	expected bool // a signal from the fleet ended it
	done     chan struct{}
	exitCode int
}

// signalEvent is one SIGKILL or SIGTERM the fleet sent.
type signalEvent struct {
	slot     int
	pid      int
	at       time.Time     // when the signal was sent
	reaped   time.Time     // SIGKILL: when the process was seen dead (its Wait returned)
	exitCode int           // SIGTERM: the process's exit code
	took     time.Duration // SIGTERM: from the signal to the exit
}

type rssSample struct {
	at  time.Time
	pid int
	kB  int
}

func newFleet(binary string, env []string, logDir string, size int) (*fleet, error) {
	f := &fleet{binary: binary, env: env, logDir: logDir, workers: make([]*process, size), stopSample: make(chan struct{})}
	for slot := range size {
		if err := f.start(slot); err != nil {
			f.killAll()
			return nil, err
		}
	}
	f.sampled.Add(1)
	go f.sample()
	return f, nil
}

func (f *fleet) start(slot int) error {
	logFile, err := os.OpenFile(filepath.Join(f.logDir, fmt.Sprintf("worker-%d.log", slot)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(f.binary)
	cmd.Env = f.env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting worker %d: %w", slot, err)
	}
	p := &process{slot: slot, cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	fmt.Fprintf(logFile, "--- soak: started pid %d at %s\n", p.pid, time.Now().Format(time.RFC3339Nano))
	f.mu.Lock()
	f.workers[slot] = p
	f.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.exitCode = exitCode(cmd, err)
		f.mu.Lock()
		expected, stopping := p.expected, f.stopping
		if !expected {
			f.unexpected = append(f.unexpected, fmt.Sprintf("worker pid %d (slot %d) exited by itself with code %d", p.pid, slot, p.exitCode))
		}
		f.mu.Unlock()
		close(p.done)
		if !expected && !stopping {
			_ = f.start(slot) // keep three workers running
		}
	}()
	return nil
}

func exitCode(cmd *exec.Cmd, err error) int {
	if err == nil {
		return 0
	}
	if status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		return 128 + int(status.Signal())
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return -1
}

func (f *fleet) current(slot int) *process {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.workers[slot]
}

// kill SIGKILLs the worker in slot and starts a new one in its place.
func (f *fleet) kill(slot int) (signalEvent, error) {
	p := f.current(slot)
	f.mu.Lock()
	p.expected = true
	f.mu.Unlock()
	event := signalEvent{slot: slot, pid: p.pid, at: time.Now()}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return event, err
	}
	<-p.done
	event.reaped = time.Now()
	f.mu.Lock()
	f.kills = append(f.kills, event)
	f.mu.Unlock()
	return event, f.start(slot)
}

// term SIGTERMs the worker in slot, waits for its drain, and starts a new one.
func (f *fleet) term(slot int, timeout time.Duration) (signalEvent, error) {
	p := f.current(slot)
	event, err := f.drain(p, timeout)
	f.mu.Lock()
	f.terms = append(f.terms, event)
	f.mu.Unlock()
	if err != nil {
		return event, err
	}
	return event, f.start(slot)
}

func (f *fleet) drain(p *process, timeout time.Duration) (signalEvent, error) {
	f.mu.Lock()
	p.expected = true
	f.mu.Unlock()
	event := signalEvent{slot: p.slot, pid: p.pid, at: time.Now()}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return event, err
	}
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		event.took = time.Since(event.at)
		event.exitCode = p.exitCode
		return event, fmt.Errorf("worker pid %d did not exit within %s of SIGTERM", p.pid, timeout)
	}
	event.took = time.Since(event.at)
	event.exitCode = p.exitCode
	return event, nil
}

// stopAll drains every worker with SIGTERM and returns the events (exit codes).
func (f *fleet) stopAll(timeout time.Duration) []signalEvent {
	f.mu.Lock()
	f.stopping = true
	workers := append([]*process(nil), f.workers...)
	f.mu.Unlock()
	events := make([]signalEvent, len(workers))
	var wg sync.WaitGroup
	for i, p := range workers {
		wg.Go(func() { events[i], _ = f.drain(p, timeout) })
	}
	wg.Wait()
	f.stopSampling()
	return events
}

// killAll SIGKILLs every worker (cleanup after an error).
func (f *fleet) killAll() {
	f.mu.Lock()
	f.stopping = true
	workers := append([]*process(nil), f.workers...)
	f.mu.Unlock()
	for _, p := range workers {
		if p == nil {
			continue
		}
		f.mu.Lock()
		p.expected = true
		f.mu.Unlock()
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	f.stopSampling()
}

func (f *fleet) stopSampling() {
	select {
	case <-f.stopSample:
	default:
		close(f.stopSample)
		f.sampled.Wait()
	}
}

// sample reads VmRSS of every live worker every 250 ms.
func (f *fleet) sample() {
	defer f.sampled.Done()
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-f.stopSample:
			return
		case <-ticker.C:
		}
		f.mu.Lock()
		pids := make([]int, 0, len(f.workers))
		for _, p := range f.workers {
			if p != nil {
				pids = append(pids, p.pid)
			}
		}
		f.mu.Unlock()
		now := time.Now()
		for _, pid := range pids {
			if kB, ok := vmRSS(pid); ok {
				f.mu.Lock()
				f.samples = append(f.samples, rssSample{at: now, pid: pid, kB: kB})
				f.mu.Unlock()
			}
		}
	}
}

// vmRSS reads a process's resident set size from /proc/PID/status.
func vmRSS(pid int) (int, bool) {
	file, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		if rest, ok := strings.CutPrefix(scanner.Text(), "VmRSS:"); ok {
			kB, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kB, err == nil
		}
	}
	return 0, false
}
