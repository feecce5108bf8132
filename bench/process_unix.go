//go:build unix

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is a contender's process.
type process struct {
	pid  int
	stop func()
}

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const clockTicks = 100

// cpu is the CPU time (user + system) the process has used so far: the utime and stime
// of /proc/<pid>/stat, the counters getrusage(RUSAGE_SELF) reads inside the process.
// ok is false where /proc is missing.
func (p *process) cpu() (time.Duration, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	_, rest, found := strings.Cut(string(data), ") ")
	fields := strings.Fields(rest)
	if !found || len(fields) < 13 {
		return 0, false
	}
	// utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}

// startProcess runs a command in its own process group until stopped with SIGTERM
// (then SIGKILL after 5 s).
func startProcess(name string, args []string, dir string, env []string, logs io.Writer) (*process, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return &process{pid: cmd.Process.Pid, stop: func() {
		pid := cmd.Process.Pid
		children := childPIDs(pid)
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-done
		}
		for _, child := range children {
			_ = syscall.Kill(-child, syscall.SIGKILL)
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
	}}, nil
}

// childPIDs lists pid's direct children (Linux /proc).
func childPIDs(pid int) []int {
	var children []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(data)) {
			if child, err := strconv.Atoi(field); err == nil {
				children = append(children, child)
			}
		}
	}
	return children
}

// selfCPU is this process's CPU time so far (getrusage RUSAGE_SELF): the proxies', while
// a contender runs.
func selfCPU() time.Duration {
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// emulatorProcess is the SQS emulator's process, for its CPU time: the pid in
// BENCH_EMULATOR_PID, else in <root>/localstack/.run/<emulator>.pid (written by
// localstack/up and localstack/elasticmq-up); nil when neither is there.
func emulatorProcess(root, emulator string) *process {
	text := os.Getenv("BENCH_EMULATOR_PID")
	if text == "" {
		data, err := os.ReadFile(filepath.Join(root, "localstack", ".run", emulator+".pid"))
		if err != nil {
			return nil
		}
		text = string(data)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil {
		return nil
	}
	return &process{pid: pid}
}
