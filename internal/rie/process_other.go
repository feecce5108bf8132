//go:build !unix

package rie

import "os/exec"

type process struct{}

func setProcessGroup(*exec.Cmd) {}
func signalGroup(int, bool)     {}
func childPIDs(int) []process   { return nil }
func killProcess(process)       {}
