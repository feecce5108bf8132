//go:build !unix

package main

import (
	"errors"
	"io"
)

// startProcess needs process groups, so the bench's peer processes run on unix only.
func startProcess(string, []string, string, []string, io.Writer) (func(), error) {
	return nil, errors.New("bench: the peer contenders run in process groups, on unix only")
}
