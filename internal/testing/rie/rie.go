// Package rie runs Lambda functions locally for tests, through the AWS Lambda Runtime
// Interface Emulator (RIE): the same Runtime API the Lambda service offers a provided.al2023
// function, in front of the real bootstrap binary.
//
// The RIE is pinned with a tool line in tools/go.mod, a module of its own so that its
// dependencies never reach the library's go.mod; `go tool aws-lambda-rie` (anywhere in the
// repository's go.work, or `cd tools && go tool aws-lambda-rie` without it) needs nothing
// installed by hand:
//
//	fn := rie.Start(t, rie.Options{
//		Bootstrap: rie.BuildBootstrap(t, "github.com/sqsworker/sqsworker/examples/lambdatest"),
//		Env:       []string{"LAMBDATEST_MODE=adapter"},
//	})
//	response, err := fn.Invoke(ctx, payload)
//
// One RIE is one execution environment: it serves one invocation at a time (a second
// concurrent one gets 400) and initialises the function on its first invocation. Start
// several for concurrent invocations.
//
// RIE behaviour the harness and its users rely on (checked against the pinned version):
//   - a function error is HTTP 200 with {"errorMessage","errorType"} in the body and no
//     X-Amz-Function-Error header; a crash or panic exit is HTTP 502 with such a body;
//   - a timeout is HTTP 200 with the plain-text body "Task timed out after N.00 seconds",
//     and the next invocation initialises a new runtime process;
//   - the RIE passes its whole environment to the function, so AWS_ENDPOINT_URL_SQS and
//     the credentials reach it;
//   - its Runtime API listens on 127.0.0.1:9001 unless told otherwise, so every instance
//     gets --runtime-api-address with a free port;
//   - the "Init Duration" of its REPORT line times only the asynchronous start of Init;
//     the real cold start is the "INIT REPORT(durationMs: ...)" line, see InitDuration.
package rie

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Module and Version name the pinned RIE; tools/go.mod requires the same version (a test
// checks it).
const (
	Module  = "github.com/aws/aws-lambda-runtime-interface-emulator"
	Version = "v0.0.0-20261030222936-bef5c4ba774d"
)

// toolsModule is the module whose go.mod holds the RIE's tool line.
const toolsModule = "github.com/sqsworker/sqsworker/tools"

// InvokePath is the RIE's Invoke API path.
const InvokePath = "/2015-03-31/functions/function/invocations"

// Options describes one emulated function.
type Options struct {
	// Bootstrap is the path of the function's bootstrap executable (see BuildBootstrap).
	Bootstrap string
	// Env is added to this process's environment, which the RIE passes to the function.
	Env []string
	// Timeout is the function timeout (AWS_LAMBDA_FUNCTION_TIMEOUT, whole seconds); if
	// zero, 30 s.
	Timeout time.Duration
	// Name is AWS_LAMBDA_FUNCTION_NAME; if empty, "sqsworker-test".
	Name string
}

// Function is a running RIE serving one function.
type Function struct {
	// URL is the Invoke API endpoint: POST an event, get the function's response.
	URL string

	cmd    *exec.Cmd
	output *SyncBuffer
	done   chan struct{}
}

// Start starts the RIE on 127.0.0.1 with free ports, running options.Bootstrap, waits
// until it accepts connections, and stops it (and the function) when the test ends.
func Start(t testing.TB, options Options) *Function {
	t.Helper()
	if options.Bootstrap == "" {
		t.Fatal("rie: Options.Bootstrap is empty")
	}
	binary := Binary(t)
	timeout := options.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	name := options.Name
	if name == "" {
		name = "sqsworker-test"
	}
	// The ports are free when chosen but the RIE binds them a moment later, so another
	// process (a parallel test) can take one in between: the RIE then exits with "address
	// already in use", and the start is tried again on new ports.
	for attempt := 1; ; attempt++ {
		fn, err := start(t, binary, name, timeout, options)
		if err == nil {
			return fn
		}
		if !errors.Is(err, errAddressInUse) || attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("rie: attempt %d: %v; trying new ports", attempt, err)
	}
}

var errAddressInUse = errors.New("rie: a port was taken before the emulator bound it")

// start runs the RIE once on two newly chosen ports and waits until it listens.
func start(t testing.TB, binary, name string, timeout time.Duration, options Options) (*Function, error) {
	t.Helper()
	addresses := FreeAddresses(t, 2)
	invokeAddress, runtimeAddress := addresses[0], addresses[1]
	cmd := exec.Command(binary,
		"--runtime-interface-emulator-address", invokeAddress,
		"--runtime-api-address", runtimeAddress,
		options.Bootstrap)
	cmd.Dir = filepath.Dir(options.Bootstrap)
	cmd.Env = append(os.Environ(),
		"AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int((timeout+time.Second-1)/time.Second)),
		"AWS_LAMBDA_FUNCTION_NAME="+name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=128",
	)
	cmd.Env = append(cmd.Env, options.Env...)
	output := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = output, output
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("rie: starting %s: %w", binary, err)
	}
	fn := &Function{URL: "http://" + invokeAddress + InvokePath, cmd: cmd, output: output, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(fn.done)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-fn.done:
			fn.stop()
			if strings.Contains(fn.Output(), "address already in use") {
				return nil, fmt.Errorf("%w:\n%s", errAddressInUse, fn.Output())
			}
			return nil, fmt.Errorf("rie: emulator exited before listening:\n%s", fn.Output())
		default:
		}
		// Ready when an HTTP answer (any status: GET of / invokes nothing) comes back: a TCP
		// accept alone came before the RIE served, and the first invocation was reset.
		if answersHTTP(invokeAddress) {
			t.Cleanup(func() {
				fn.stop()
				if t.Failed() {
					t.Logf("rie: output of the emulator at %s:\n%s", invokeAddress, fn.Output())
				}
			})
			return fn, nil
		}
		if time.Now().After(deadline) {
			fn.stop()
			return nil, fmt.Errorf("rie: emulator not listening on %s after 15 s:\n%s", invokeAddress, fn.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answersHTTP reports whether an HTTP server answers a GET of / at address within 1 s.
func answersHTTP(address string) bool {
	client := http.Client{Timeout: time.Second}
	response, err := client.Get("http://" + address + "/")
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, response.Body)
	_ = response.Body.Close()
	return true
}

// stop asks the RIE to shut down (SIGTERM: it kills the function's process group, which
// it started apart from its own), then kills whatever is left by process group.
func (f *Function) stop() {
	pid := f.cmd.Process.Pid
	children := childPIDs(pid)
	signalGroup(pid, false)
	select {
	case <-f.done:
	case <-time.After(3 * time.Second):
	}
	signalGroup(pid, true)
	_ = f.cmd.Process.Kill()
	for _, child := range children {
		killProcess(child)
	}
	<-f.done
}

// Output returns everything the RIE and the function wrote so far.
func (f *Function) Output() string { return f.output.String() }

var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// InitDuration returns the duration of the function's first Init phase (its cold start:
// starting the bootstrap until it asks for its first event), from the RIE's
// "INIT REPORT" log line. ok is false before the first invocation.
func (f *Function) InitDuration() (duration time.Duration, ok bool) {
	match := initReport.FindStringSubmatch(f.Output())
	if match == nil {
		return 0, false
	}
	milliseconds, err := strconv.ParseFloat(match[1], 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(milliseconds * float64(time.Millisecond)), true
}

// Response is what the Invoke API returned.
type Response struct {
	StatusCode int         // HTTP status: 200, also for function errors and timeouts
	Header     http.Header // response headers (no X-Amz-Function-Error from the RIE)
	Body       []byte      // the function's response or error document
}

// Invoke posts payload to the function and returns the RIE's answer.
func (f *Function) Invoke(ctx context.Context, payload []byte) (*Response, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return nil, err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		return nil, err
	}
	return &Response{StatusCode: response.StatusCode, Header: response.Header, Body: body}, nil
}

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// Binary returns the path of the pinned aws-lambda-rie, built by `go tool -n
// aws-lambda-rie` in the tools module (tools/go.mod's tool line; cached in the Go build
// cache). It works in the repository's go.work and, with GOWORK=off, from any module that
// replaces github.com/sqsworker/sqsworker with the checkout.
func Binary(t testing.TB) string {
	t.Helper()
	binaryOnce.Do(func() { binaryPath, binaryErr = toolBinary() })
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

func toolBinary() (string, error) {
	dir, err := toolsDir()
	if err != nil {
		return "", err
	}
	cmd := goCommand(nil, "tool", "-n", "aws-lambda-rie")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	path := strings.TrimSpace(string(out))
	if err != nil || path == "" {
		return "", fmt.Errorf("rie: `go tool -n aws-lambda-rie` in %s failed: %v\n%s", dir, err, stderr.Bytes())
	}
	return path, nil
}

// toolsDir returns the directory of the tools module (tools/ of the sqsworker checkout),
// found through `go list -m` from the working directory: the checkout's root is the
// directory of module github.com/sqsworker/sqsworker, in the go.work or replaced in go.mod.
func toolsDir() (string, error) {
	out, err := goCommand(nil, "list", "-m", "-f", "{{.Dir}}", "github.com/sqsworker/sqsworker").Output()
	root := strings.TrimSpace(string(out))
	if err != nil || root == "" {
		return "", fmt.Errorf("rie: finding the sqsworker checkout with `go list -m github.com/sqsworker/sqsworker` (run inside the repository): %v", err)
	}
	dir := filepath.Join(root, "tools")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("rie: the tools module %s is missing from %s: %v", toolsModule, root, err)
	}
	return dir, nil
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*bootstrapBuild{}
)

type bootstrapBuild struct {
	once sync.Once
	path string
	err  error
}

// BuildBootstrap builds the main package pkg as a Lambda bootstrap for this machine's
// architecture, the way a provided.al2023 function is built (GOOS=linux, CGO_ENABLED=0,
// -tags lambda.norpc), once per test binary, and returns its path.
func BuildBootstrap(t testing.TB, pkg string) string {
	t.Helper()
	buildsMu.Lock()
	build, ok := builds[pkg]
	if !ok {
		build = &bootstrapBuild{}
		builds[pkg] = build
	}
	buildsMu.Unlock()
	build.once.Do(func() {
		dir, err := buildDir()
		if err != nil {
			build.err = err
			return
		}
		target := filepath.Join(dir, strconv.Itoa(len(builds))+"-"+filepath.Base(pkg), "bootstrap")
		cmd := goCommand([]string{"GOOS=linux", "GOARCH=" + runtime.GOARCH, "CGO_ENABLED=0"},
			"build", "-tags", "lambda.norpc", "-o", target, pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("rie: building bootstrap %s: %v\n%s", pkg, err, out)
			return
		}
		build.path = target
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

var (
	dirOnce sync.Once
	dirPath string
	dirErr  error
)

// buildDir is a temporary directory for this test binary's builds; Main removes it.
func buildDir() (string, error) {
	dirOnce.Do(func() { dirPath, dirErr = os.MkdirTemp("", "sqsworker-rie-") })
	return dirPath, dirErr
}

// Main runs the tests of a package that uses the harness and then removes the builds.
// Use it from TestMain: func TestMain(m *testing.M) { os.Exit(rie.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if dirPath != "" {
		_ = os.RemoveAll(dirPath)
	}
	return code
}

func goCommand(env []string, args ...string) *exec.Cmd {
	goBinary := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBinary); err != nil {
		goBinary = "go"
	}
	cmd := exec.Command(goBinary, args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// FreeAddress returns 127.0.0.1:PORT with a port that was free a moment ago.
func FreeAddress(t testing.TB) string {
	t.Helper()
	return FreeAddresses(t, 1)[0]
}

// FreeAddresses returns n distinct 127.0.0.1:PORT addresses whose ports were free a moment
// ago: all n are held open together while they are chosen, so no two are the same.
func FreeAddresses(t testing.TB, n int) []string {
	t.Helper()
	addresses := make([]string, 0, n)
	for range n {
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("rie: finding a free port: %v", err)
		}
		defer listener.Close()
		addresses = append(addresses, listener.Addr().String())
	}
	return addresses
}

// SyncBuffer collects a process's output; safe for concurrent writes and reads.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
