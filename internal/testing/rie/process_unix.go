//go:build unix

package rie

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// setProcessGroup starts the RIE in a process group of its own, so it is stopped by
// group, never by name.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM (or SIGKILL) to the process group led by pid.
func signalGroup(pid int, kill bool) {
	signal := syscall.SIGTERM
	if kill {
		signal = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, signal)
}

// process identifies a process by pid and start time, so a pid reused after the process
// ended is never signalled.
type process struct {
	pid   int
	start string
}

// childPIDs lists pid's child processes (Linux /proc; empty elsewhere). The RIE starts the
// bootstrap in a process group of its own, so it is killed by pid as well.
func childPIDs(pid int) []process {
	var children []process
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		for field := range strings.FieldsSeq(string(data)) {
			if child, err := strconv.Atoi(field); err == nil {
				children = append(children, process{pid: child, start: startTime(child)})
			}
		}
	}
	return children
}

// startTime returns field 22 of /proc/PID/stat (start time in clock ticks), or "".
func startTime(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields after it follow the last ')'.
	text := string(data)
	fields := strings.Fields(text[strings.LastIndexByte(text, ')')+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// killProcess sends SIGKILL to the process (its group, if it leads one) when it still runs.
func killProcess(p process) {
	if p.start == "" || startTime(p.pid) != p.start {
		return // already gone, or the pid now names another process
	}
	pid := p.pid
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
