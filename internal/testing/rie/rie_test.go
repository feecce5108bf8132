package rie

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

const testFunction = "github.com/sqsworker/sqsworker/examples/lambdatest"

// TestStartInvokeStop runs the test function in the emulator, invokes it twice and checks
// that stopping the emulator also ends the function's process.
func TestStartInvokeStop(t *testing.T) {
	t.Parallel()
	bootstrap := BuildBootstrap(t, testFunction)
	var children []process
	t.Run("run", func(t *testing.T) {
		fn := Start(t, Options{Bootstrap: bootstrap, Env: []string{
			"LAMBDATEST_MODE=stub",
			`LAMBDATEST_STUB_RESPONSE={"batchItemFailures":[]}`,
		}})
		if _, ok := fn.InitDuration(); ok {
			t.Error("InitDuration reported before the first invocation")
		}
		for range 2 {
			response, err := fn.Invoke(context.Background(), []byte(`{"Records":[]}`))
			if err != nil {
				t.Fatal(err)
			}
			if response.StatusCode != http.StatusOK || string(response.Body) != `{"batchItemFailures":[]}` {
				t.Fatalf("invoke: HTTP %d %s", response.StatusCode, response.Body)
			}
		}
		initDuration, ok := fn.InitDuration()
		if !ok || initDuration <= 0 {
			t.Fatalf("InitDuration = %v, %v; output:\n%s", initDuration, ok, fn.Output())
		}
		t.Logf("cold start (RIE INIT REPORT): %v", initDuration)
		if n := strings.Count(fn.Output(), "INIT START"); n != 1 {
			t.Errorf("%d INIT phases for two invocations, want 1 (a warm second invocation)", n)
		}
		children = childPIDs(fn.cmd.Process.Pid)
		if len(children) == 0 {
			t.Fatal("the emulator has no child process (the function)")
		}
	})
	for _, child := range children {
		if startTime(child.pid) == child.start {
			t.Errorf("function process %d still runs after the emulator stopped", child.pid)
		}
	}
}

// TestFunctionError pins the RIE behaviour the event source mapping relies on: a function
// error is HTTP 200 with an errorType body and no X-Amz-Function-Error header.
func TestFunctionError(t *testing.T) {
	t.Parallel()
	fn := Start(t, Options{Bootstrap: BuildBootstrap(t, testFunction), Timeout: 5 * time.Second})
	// Not an SQS event: aws-lambda-go fails to decode it, a function error.
	response, err := fn.Invoke(context.Background(), []byte(`{"Records":"not a list"}`))
	if err != nil {
		t.Fatal(err)
	}
	var document struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	if response.StatusCode != http.StatusOK || json.Unmarshal(response.Body, &document) != nil || document.ErrorType == "" {
		t.Fatalf("HTTP %d %s; want 200 with an errorType body", response.StatusCode, response.Body)
	}
	if header := response.Header.Get("X-Amz-Function-Error"); header != "" {
		t.Errorf("X-Amz-Function-Error = %q; the pinned RIE sends none, update lambda/localesm and this test", header)
	}
}

// TestToolsModulePinsVersion checks that tools/go.mod, whose tool line builds the RIE,
// requires the version this package documents as pinned.
func TestToolsModulePinsVersion(t *testing.T) {
	t.Parallel()
	dir, err := toolsDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := goCommand([]string{"GOWORK=off"}, "list", "-m", "-f", "{{.Version}}", Module)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m %s in %s: %v\n%s", Module, dir, err, out)
	}
	if got := strings.TrimSpace(string(out)); got != Version {
		t.Errorf("tools/go.mod requires %s %s; rie.Version is %s", Module, got, Version)
	}
}
