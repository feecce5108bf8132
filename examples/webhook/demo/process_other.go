//go:build !linux

package main

import "syscall"

// workerProcessAttributes: without Linux's parent-death signal, the demo kills its
// workers itself when it ends.
func workerProcessAttributes() *syscall.SysProcAttr { return nil }
