package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/testenv"
)

func TestUIUsage(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args   []string
		stderr string
	}{
		"no queue":             {[]string{"ui"}, `"queue" not set`},
		"non-loopback":         {[]string{"ui", "--queue", "q", "--addr", "10.0.0.5:8089"}, "not a loopback address"},
		"public without token": {[]string{"ui", "--queue", "q", "--addr", "10.0.0.5:8089", "--public"}, "needs --public and --token"},
		"short token":          {[]string{"ui", "--queue", "q", "--token", "abc"}, "at least 16 characters"},
		"all interfaces":       {[]string{"ui", "--queue", "q", "--addr", "0.0.0.0:8089", "--public", "--token", "0123456789abcdef"}, "not all interfaces"},
		"bad address":          {[]string{"ui", "--queue", "q", "--addr", "nowhere"}, `--addr "nowhere"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := want(t, exitUsage, tc.args...)
			if !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("stderr = %q, want %q", r.stderr, tc.stderr)
			}
		})
	}
	if r := want(t, exitOK, "ui", "--help"); !strings.Contains(r.stdout, "DNS rebinding") {
		t.Fatalf("ui --help does not explain the security rules:\n%s", r.stdout)
	}
}

// TestUIServes starts `sqsworker ui` on the emulator, loads the page, checks that a GET
// of an action answers 405, and stops it with SIGTERM (exit 0).
func TestUIServes(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "ui", "--queue", queue.URL, "--addr", "127.0.0.1:0", "--interval", "1s")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("reading the address: %v (stderr: %s)", err, stderr.String())
	}
	base := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "Operations page: "), "/")
	get := func(path string) (int, string) {
		response, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer response.Body.Close()
		body, _ := io.ReadAll(response.Body)
		return response.StatusCode, string(body)
	}
	name := queue.URL[strings.LastIndex(queue.URL, "/")+1:]
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(body, name) {
		t.Fatalf("GET / = %d:\n%s", code, body)
	}
	if code, _ := get("/redrive/move"); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /redrive/move = %d, want 405", code)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := testenv.Recv(t, done, time.Minute, "sqsworker ui to stop on SIGTERM"); err != nil {
		t.Fatalf("sqsworker ui after SIGTERM: %v (stderr: %s)", err, stderr.String())
	}
}
