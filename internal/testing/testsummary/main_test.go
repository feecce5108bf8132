package main

import (
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	tests := []struct {
		name  string
		input string
		ok    bool
		want  []string // lines in order
		never []string
	}{
		{
			name: "all passed",
			input: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"noise of a passing test\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p","Elapsed":0.5}`,
			ok:    true,
			want:  []string{"ok  \tp\t0.500s", "1 passed, 0 failed, 1 skipped"},
			never: []string{"noise of a passing test"},
		},
		{
			name: "a failed test shows its output",
			input: `{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:4: boom\n"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestB"}
{"Action":"fail","Package":"p","Elapsed":1}`,
			want: []string{"FAIL\tp\t1.000s", "--- output of p TestA", "    a_test.go:4: boom", "FAIL\tp", "1 passed, 1 failed"},
		},
		{
			name: "with -count=N a later passing run keeps the failed run's output",
			input: `{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:4: boom\n"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"noise of the passing run\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"fail","Package":"p","Elapsed":1}`,
			want:  []string{"--- output of p TestA", "    a_test.go:4: boom", "1 passed, 1 failed"},
			never: []string{"noise of the passing run"},
		},
		{
			name: "a package that fails outside its tests counts as a failure",
			input: `{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Output":"panic: TestMain\n"}
{"Action":"fail","Package":"p","Elapsed":0}`,
			want: []string{"--- output of p", "panic: TestMain", "0 passed, 1 failed"},
		},
		{
			name: "a binary that never finished fails",
			input: `{"Action":"start","Package":"p"}
{"Action":"pass","Package":"p","Test":"TestA"}`,
			want: []string{"FAIL\tp\t(no result", "1 passed, 1 failed"},
		},
		{
			// Each skipped test is named with its skip message (the last logged entry, an
			// earlier t.Log is not it), once per test however often -count ran it, and a
			// failed test's output still comes first. Before, the summary only counted them.
			name: "skipped tests are named with their messages",
			input: `{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: a note\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:4: neither tofu nor terraform is installed\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:4: neither tofu nor terraform is installed\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestC/sub","Output":"=== RUN   TestC/sub\n"}
{"Action":"output","Package":"p","Test":"TestC/sub","Output":"    c_test.go:9: no chromium\n"}
{"Action":"output","Package":"p","Test":"TestC/sub","Output":"        on this machine\n"}
{"Action":"output","Package":"p","Test":"TestC/sub","Output":"--- SKIP: TestC/sub (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestC/sub"}
{"Action":"output","Package":"p","Test":"TestD","Output":"=== CONT  TestD\n"}
{"Action":"output","Package":"p","Test":"TestD","Output":"--- SKIP: TestD (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestD"}
{"Action":"output","Package":"p","Test":"TestE","Output":"    e_test.go:1: boom\n"}
{"Action":"fail","Package":"p","Test":"TestE"}
{"Action":"fail","Package":"p","Elapsed":1}`,
			want: []string{
				"--- output of p TestE", "boom", "FAIL\tp\n",
				"SKIP\tp\tTestB\tb_test.go:4: neither tofu nor terraform is installed (2 times)\n",
				"SKIP\tp\tTestC/sub\tc_test.go:9: no chromium\n\t\t\ton this machine\n",
				"SKIP\tp\tTestD\t(no message)\n",
				"0 passed, 1 failed, 4 skipped",
			},
			never: []string{"a note", "=== RUN", "--- SKIP"},
		},
		{
			name:  "no test event at all fails",
			input: "go: cannot find main module\n",
			want:  []string{"go: cannot find main module", "0 passed, 0 failed"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			s := &summary{output: map[key]*strings.Builder{}, result: map[string]event{}, w: &out}
			if err := s.read(strings.NewReader(tc.input)); err != nil {
				t.Fatal(err)
			}
			if ok := s.report(); ok != tc.ok {
				t.Errorf("report() = %v, want %v", ok, tc.ok)
			}
			text := out.String()
			rest := text
			for _, line := range tc.want {
				i := strings.Index(rest, line)
				if i < 0 {
					t.Fatalf("output lacks %q after the earlier lines:\n%s", line, text)
				}
				rest = rest[i+len(line):]
			}
			if lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n"); lines[len(lines)-1] != tc.want[len(tc.want)-1] {
				t.Errorf("last line = %q, want %q", lines[len(lines)-1], tc.want[len(tc.want)-1])
			}
			for _, never := range tc.never {
				if strings.Contains(text, never) {
					t.Errorf("output holds %q:\n%s", never, text)
				}
			}
		})
	}
}
