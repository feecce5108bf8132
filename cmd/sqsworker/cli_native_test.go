package main

import (
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

func TestBuildVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"installed at a version", &debug.BuildInfo{GoVersion: "go1.26.6", Main: debug.Module{Version: "v0.1.0"}}, "v0.1.0, go1.26.6"},
		{"built in the checkout", &debug.BuildInfo{GoVersion: "go1.26.6", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "9c99efb"}, {Key: "vcs.modified", Value: "true"},
		}}, "(devel) (revision 9c99efb, modified), go1.26.6"},
		{"clean checkout", &debug.BuildInfo{GoVersion: "go1.26.6", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "9c99efb"}, {Key: "vcs.modified", Value: "false"},
		}}, "(devel) (revision 9c99efb), go1.26.6"},
	}
	for _, tc := range tests {
		if got := buildVersion(tc.info, true); got != tc.want {
			t.Errorf("%s: buildVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := buildVersion(nil, false); got != "unknown (no build information)" {
		t.Errorf("without build information: %q", got)
	}
}

func TestCLIVersion(t *testing.T) {
	t.Parallel()
	r := want(t, exitOK, "--version")
	// The test binary is built inside the checkout (go.work): the module version is (devel).
	if !strings.HasPrefix(r.stdout, "sqsworker version (devel)") || !strings.Contains(r.stdout, ", go1.") {
		t.Fatalf("--version printed %q", r.stdout)
	}
}

func TestCLIJSONErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		code     int
		kind     string
		message  string
		emulator bool
	}{
		{name: "unknown flag before -o", args: []string{"stats", "q", "--bogus", "-o", "json"}, code: exitUsage, kind: "usage", message: "unknown flag: --bogus"},
		{name: "missing argument", args: []string{"-o", "json", "stats"}, code: exitUsage, kind: "usage", message: "accepts 1 arg(s), received 0"},
		{name: "required flag", args: []string{"--output=json", "idempotency", "get", "k"}, code: exitUsage, kind: "usage", message: `required flag(s) "table" not set`},
		{name: "AWS error", args: []string{"stats", "no-such-queue-" + testenv.UniqueName(t), "-ojson"}, code: exitError, kind: "error", message: "queue does not exist", emulator: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.emulator {
				testenv.AWSConfig(t)
			}
			r := want(t, tc.code, tc.args...)
			decoder := json.NewDecoder(strings.NewReader(r.stderr))
			decoder.DisallowUnknownFields()
			var got jsonError
			if err := decoder.Decode(&got); err != nil {
				t.Fatalf("stderr is not one JSON error object: %v\n%s", err, r.stderr)
			}
			if decoder.More() || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("stderr holds more than one line or object:\n%s", r.stderr)
			}
			if got.Code != tc.kind || got.ExitCode != tc.code || !strings.Contains(got.Message, tc.message) || strings.HasPrefix(got.Message, "sqsworker: ") {
				t.Fatalf("error = %+v, want code %q, exit_code %d, a message containing %q", got, tc.kind, tc.code, tc.message)
			}
			if r.stdout != "" {
				t.Fatalf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

func TestCLITableFromEnvironment(t *testing.T) {
	t.Parallel()
	table := testenv.NewTable(t, testenv.DynamoDB(t))
	missing := "no-such-table-" + testenv.UniqueName(t)

	// The variable stands in for the required flag: the record is looked up in its table.
	r := cli(t, []string{tableVariable + "=" + table}, "idempotency", "get", "k")
	if r.code != exitError || !strings.Contains(r.stderr, `no idempotency record for key "idempotency##k" in table `+table) {
		t.Fatalf("with %s: exit %d, stderr %q", tableVariable, r.code, r.stderr)
	}
	// The flag wins over the variable.
	r = cli(t, []string{tableVariable + "=" + missing}, "idempotency", "get", "k", "--table", table)
	if r.code != exitError || !strings.Contains(r.stderr, "in table "+table) {
		t.Fatalf("--table over %s: exit %d, stderr %q", tableVariable, r.code, r.stderr)
	}
	r = cli(t, []string{tableVariable + "="}, "idempotency", "get", "k")
	if r.code != exitUsage || !strings.Contains(r.stderr, `"table" not set`) {
		t.Fatalf("an empty %s: exit %d, stderr %q, want the required-flag error", tableVariable, r.code, r.stderr)
	}
	help := want(t, exitOK, "schedules", "--help")
	if !strings.Contains(help.stdout, "(env "+tableVariable+")") {
		t.Fatalf("schedules --help does not name %s:\n%s", tableVariable, help.stdout)
	}
}

func TestCLIQueueCompletion(t *testing.T) {
	t.Parallel()
	queue := testenv.NewQueue(t, testenv.SQS(t), testenv.QueueOptions{MaxReceiveCount: 3})
	name := queueName(queue.URL)
	dlq := queueName(queue.DeadLetterQueueURL)
	// `__complete` is what the completion scripts run: candidates, one a line, then
	// ":DIRECTIVE" (4: no file completion, 1: error).
	complete := func(args ...string) []string {
		t.Helper()
		r := want(t, exitOK, append([]string{"__complete"}, args...)...)
		return strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	}
	wantLines := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s completed to %q, want %q", what, got, want)
		}
	}
	candidates := func(got []string) []string {
		found := map[string]bool{}
		for _, line := range got[:len(got)-1] {
			found[line] = true
		}
		var out []string
		for _, want := range []string{name, dlq} {
			if found[want] {
				out = append(out, want)
			}
		}
		return append(out, got[len(got)-1])
	}
	for _, args := range [][]string{
		{"stats", name},
		{"dlq", "peek", name},
		{"redrive", "start", name},
		{"send", name},
		{"redrive", "move", "--from", name},
		{"redrive", "move", "--from", dlq, "--to", name},
		{"ui", "--queue", name},
	} {
		wantLines(strings.Join(args, " "), candidates(complete(args...)), name, dlq, ":4")
	}
	wantLines("the dead-letter queue's own name", complete("stats", dlq), dlq, ":4")
	wantLines("a second argument", complete("stats", name, ""), ":4")
	wantLines("a URL", complete("stats", queue.URL), ":4")

	r := want(t, exitOK, "completion", "bash")
	if !strings.Contains(r.stdout, "bash completion V2 for sqsworker") {
		t.Fatalf("completion bash printed:\n%.200s", r.stdout)
	}
}
