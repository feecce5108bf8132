package main

import "syscall"

// workerProcessAttributes makes the kernel kill a worker when the demo dies, so no
// orphaned worker keeps consuming the demo queue in a later run.
func workerProcessAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
