//go:build !unix

package main

import (
	"errors"
	"io"
	"time"
)

// process is a contender's process.
type process struct {
	pid  int
	stop func()
}

func (p *process) cpu() (time.Duration, bool) { return 0, false }

// startProcess needs process groups, so the bench's contender processes run on unix only.
func startProcess(string, []string, string, []string, io.Writer) (*process, error) {
	return nil, errors.New("bench: the contenders run in process groups, on unix only")
}

func selfCPU() time.Duration { return 0 }

func emulatorProcess(string, string) *process { return nil }
