// Command testsummary reads `go test -json` on stdin and prints a short report: one
// ok/FAIL line per package as each finishes, then the output of every failed test (and
// of a package that failed outside its tests), the failed packages again, every skipped
// test with its skip message (one "SKIP<tab>package<tab>test<tab>message" line each, in
// the order they were skipped), and a last line of the form
//
//	N passed, N failed, N skipped
//
// (", N skipped" only when some were). It exits 1 when any test or package failed or the
// input held no test event, so `set -o pipefail; go test -json ./... | testsummary` keeps
// make's exit status. Only the standard library is used.
//
// Usage: go test -json ./... | go run ./internal/testing/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
	// ImportPath names the package of a "build-output" event.
	ImportPath string
}

// key names a test in a package; Test is "" for the package itself.
type key struct{ pkg, test string }

type summary struct {
	output   map[key]*strings.Builder
	failed   []failure // failed tests and packages, in the order they finished
	packages []string
	result   map[string]event // each package's final pass/fail/skip event
	passed   int
	failures int
	skipped  int
	skips    []skip   // skipped tests, each once, in the order first skipped
	other    []string // lines that were not JSON (build errors print so)
	w        io.Writer
}

// failure is one failed test or package with the output it printed in that run (with
// -count=N a test runs N times under one name; a later passing run must not take the
// failed run's output with it).
type failure struct {
	key
	output string
}

// skip is a skipped test with its skip message and how often it was skipped (-count=N).
type skip struct {
	key
	message string
	times   int
}

// skipMessage returns the skip message in a skipped test's output: its last logged
// entry (a "    file_test.go:12: text" line and the more indented lines continuing it),
// since t.Skip logs its arguments last; "(no message)" after a bare t.SkipNow.
func skipMessage(output string) string {
	var last []string
	for line := range strings.SplitSeq(output, "\n") {
		switch {
		case strings.HasPrefix(line, "        ") && len(last) > 0:
			last = append(last, strings.TrimSpace(line))
		case strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			last = []string{strings.TrimSpace(line)}
		}
	}
	if len(last) == 0 {
		return "(no message)"
	}
	return strings.Join(last, "\n\t\t\t")
}

// noteSkip records a skipped test, once per test and message.
func (s *summary) noteSkip(k key, message string) {
	for i := range s.skips {
		if s.skips[i].key == k && s.skips[i].message == message {
			s.skips[i].times++
			return
		}
	}
	s.skips = append(s.skips, skip{k, message, 1})
}

// take removes and returns the output recorded for k so far.
func (s *summary) take(k key) string {
	b := s.output[k]
	delete(s.output, k)
	if b == nil {
		return ""
	}
	return b.String()
}

func main() {
	s := &summary{output: map[key]*strings.Builder{}, result: map[string]event{}, w: os.Stdout}
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		os.Exit(2)
	}
	if !s.report() {
		os.Exit(1)
	}
}

func (s *summary) read(r io.Reader) error {
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for scanner.Scan() {
		line := scanner.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			s.other = append(s.other, string(line))
			continue
		}
		s.add(e)
	}
	return scanner.Err()
}

func (s *summary) add(e event) {
	k := key{e.Package, e.Test}
	switch e.Action {
	case "build-output":
		s.other = append(s.other, strings.TrimSuffix(e.Output, "\n"))
	case "start":
		s.packages = append(s.packages, e.Package)
	case "output":
		b := s.output[k]
		if b == nil {
			b = &strings.Builder{}
			s.output[k] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			s.result[e.Package] = e
			s.packageLine(e)
			if e.Action == "fail" {
				s.failed = append(s.failed, failure{k, s.take(k)})
			}
			return
		}
		switch e.Action {
		case "pass":
			s.passed++
			delete(s.output, k) // a passed test's output is not shown
		case "fail":
			s.failures++
			s.failed = append(s.failed, failure{k, s.take(k)})
		case "skip":
			s.skipped++
			s.noteSkip(k, skipMessage(s.take(k)))
		}
	}
}

// packageLine prints a package's result as go test does, as soon as it is known.
func (s *summary) packageLine(e event) {
	switch e.Action {
	case "fail":
		fmt.Fprintf(s.w, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
	case "skip":
		fmt.Fprintf(s.w, "?   \t%s\t[no test files]\n", e.Package)
	default:
		fmt.Fprintf(s.w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
	}
}

// report prints, after the package lines, the output of what failed and the summary
// line, and returns whether everything passed.
func (s *summary) report() bool {
	w := s.w
	failed := s.failures
	var failedPackages []string
	for _, pkg := range s.packages {
		if _, done := s.result[pkg]; !done {
			fmt.Fprintf(w, "FAIL\t%s\t(no result: the test binary did not finish)\n", pkg)
			failedPackages = append(failedPackages, pkg)
			failed++
		}
	}
	for _, line := range s.other {
		fmt.Fprintln(w, line)
	}
	// Failed tests' output, then that of packages that failed outside a test (a build
	// error, a panic, a timeout, TestMain), which count as one failure each, so the line
	// never says "0 failed" for a failed run.
	for _, f := range s.failed {
		k := f.key
		if k.test == "" {
			failedPackages = append(failedPackages, k.pkg)
			if s.failedTestIn(k.pkg) {
				continue
			}
			failed++
			fmt.Fprintf(w, "--- output of %s\n", k.pkg)
		} else {
			fmt.Fprintf(w, "--- output of %s %s\n", k.pkg, k.test)
		}
		fmt.Fprint(w, f.output)
	}
	for _, pkg := range failedPackages {
		fmt.Fprintf(w, "FAIL\t%s\n", pkg)
	}
	for _, sk := range s.skips {
		times := ""
		if sk.times > 1 {
			times = fmt.Sprintf(" (%d times)", sk.times)
		}
		fmt.Fprintf(w, "SKIP\t%s\t%s\t%s%s\n", sk.pkg, sk.test, sk.message, times)
	}
	line := fmt.Sprintf("%d passed, %d failed", s.passed, failed)
	if s.skipped > 0 {
		line += fmt.Sprintf(", %d skipped", s.skipped)
	}
	fmt.Fprintln(w, line)
	return failed == 0 && len(s.result) > 0
}

func (s *summary) failedTestIn(pkg string) bool {
	for _, f := range s.failed {
		if f.pkg == pkg && f.test != "" {
			return true
		}
	}
	return false
}
