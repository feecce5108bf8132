// Command sqsworker is the operations CLI of the sqsworker runtime: queue statistics,
// dead-letter triage, redrive (native move tasks and client-side moves), sending test
// messages and releasing stuck idempotency records.
//
// It reads AWS configuration from the standard chain (AWS_PROFILE or --profile,
// AWS_REGION or --region, credentials, and endpoint overrides such as
// AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_CLOUDWATCH).
//
// Exit codes, for scripts:
//
//	0  success
//	1  error (AWS call failed, queue or record not found, refused operation)
//	2  usage error (unknown command or flag, missing or bad argument)
//	3  partial: the command ran but did not do everything asked (some messages not
//	   moved or not sent, a move task cancelled)
//
// Run `sqsworker --help` or `sqsworker COMMAND --help` for each command.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit codes; see the package comment.
const (
	exitOK      = 0
	exitError   = 1
	exitUsage   = 2
	exitPartial = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := newApp(stdout, stderr)
	root := newRootCommand(a)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	code := exitCode(err)
	if err != nil && !errors.Is(err, errReported) {
		message := strings.TrimPrefix(err.Error(), "sqsworker: ")
		if a.json() || jsonRequested(args) {
			writeJSONError(stderr, code, message)
			return code
		}
		fmt.Fprintf(stderr, "sqsworker: %s\n", message)
		if code == exitUsage {
			fmt.Fprintln(stderr, "Run 'sqsworker --help' (or COMMAND --help) for usage.")
		}
	}
	return code
}

// jsonError is the one object an error becomes on stderr under -o json: code names the
// kind ("usage" for exit 2, "error" for exit 1, "partial" for exit 3), exit_code is the
// process's exit code, message the text the plain output prints after "sqsworker: ".
type jsonError struct {
	Code     string `json:"code"`
	ExitCode int    `json:"exit_code"`
	Message  string `json:"message"`
}

func writeJSONError(stderr io.Writer, code int, message string) {
	kind := map[int]string{exitUsage: "usage", exitPartial: "partial"}[code]
	if kind == "" {
		kind = "error"
	}
	_ = json.NewEncoder(stderr).Encode(jsonError{Code: kind, ExitCode: code, Message: message})
}

// jsonRequested reports whether args ask for -o json, for errors met before the flag
// parser reached --output (an unknown flag before it, for example).
func jsonRequested(args []string) bool {
	for i, arg := range args {
		if arg == "--" {
			return false
		}
		switch arg {
		case "-o" + outputJSON, "-o=" + outputJSON, "--output=" + outputJSON:
			return true
		case "-o", "--output":
			if i+1 < len(args) && args[i+1] == outputJSON {
				return true
			}
		}
	}
	return false
}

// errReported marks an outcome the command already reported on its outputs.
var errReported = errors.New("sqsworker: reported")

// codedError carries an exit code other than 1.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// usageError marks err as a usage error (exit 2).
func usageError(err error) error { return &codedError{code: exitUsage, err: err} }

// partial reports a partial outcome (exit 3) that the command already printed.
func partial() error { return &codedError{code: exitPartial, err: errReported} }

// exitCode maps an error to the documented exit codes. Cobra's own argument and flag
// errors (unknown command, required flag missing) are usage errors.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if exit, ok := errors.AsType[*codedError](err); ok {
		return exit.code
	}
	message := err.Error()
	for _, prefix := range []string{"unknown command", "required flag", "unknown flag", "unknown shorthand flag", "invalid argument", "flag needs an argument"} {
		if strings.HasPrefix(message, prefix) {
			return exitUsage
		}
	}
	return exitError
}
