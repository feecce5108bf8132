//go:build !unix

package rie

import "os/exec"

// process mirrors the unix type; outside unix no child process is ever listed.
type process struct {
	pid   int
	start string
}

func setProcessGroup(*exec.Cmd) {}
func signalGroup(int, bool)     {}
func childPIDs(int) []process   { return nil }
func startTime(int) string      { return "" }
func killProcess(process)       {}
