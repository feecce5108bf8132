// Command licensecheck fails unless every published module of the workspace (each module
// in go.work whose go.mod has no "// Module kind: development" line) has a LICENSE file
// that github.com/google/licensecheck, the detector pkg.go.dev uses, reads as Apache-2.0
// covering at least MinPercent of its text. pkg.go.dev hides the documentation of a
// module whose licence it cannot detect (https://pkg.go.dev/license-policy).
//
// Run from the repository root (make license-check):
//
//	go run ./tools/licensecheck
//
// It prints one line per module and exits 1 when any module fails.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/licensecheck"
)

// WantID is the SPDX identifier every published module's licence must be.
const WantID = "Apache-2.0"

// MinPercent is the least share of a LICENSE file's words, in percent, that the Apache-2.0
// match must cover: the file holds the licence and nothing else. pkg.go.dev accepts a file
// from 75 %; this check is stricter so that added text is noticed.
const MinPercent = 95.0

// developmentMarker starts the go.mod line that marks a module users never fetch (the one
// place the classification is declared; scripts/check-module-imports reads it too).
const developmentMarker = "// Module kind: development"

func main() {
	dirs, err := publishedModuleDirs()
	if err != nil {
		fmt.Fprintln(os.Stderr, "licensecheck:", err)
		os.Exit(1)
	}
	failed := 0
	for _, dir := range dirs {
		if err := checkLicenseFile(filepath.Join(dir, "LICENSE")); err != nil {
			fmt.Fprintf(os.Stderr, "licensecheck: FAIL %s: %v\n", dir, err)
			failed++
			continue
		}
		fmt.Printf("licensecheck: ok %s: %s\n", dir, WantID)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "licensecheck: %d of %d published modules have no detected %s licence\n", failed, len(dirs), WantID)
		os.Exit(1)
	}
}

// publishedModuleDirs lists the directories of the workspace's modules (go list -m) whose
// go.mod does not mark them development-only.
func publishedModuleDirs() ([]string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m: %w", err)
	}
	var dirs []string
	scanner := bufio.NewScanner(bytes.NewReader(out))
	for scanner.Scan() {
		dir := strings.TrimSpace(scanner.Text())
		if dir == "" {
			continue
		}
		gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil {
			return nil, err
		}
		if !isDevelopment(gomod) {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no published module in the workspace (run from the repository root)")
	}
	return dirs, scanner.Err()
}

// isDevelopment reports whether a go.mod marks its module development-only.
func isDevelopment(gomod []byte) bool {
	for line := range strings.Lines(string(gomod)) {
		if strings.HasPrefix(line, developmentMarker) {
			return true
		}
	}
	return false
}

// checkLicenseFile returns an error unless the file exists and is detected as WantID
// covering at least MinPercent of its text.
func checkLicenseFile(path string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return checkLicense(text)
}

// checkLicense returns an error unless text is detected as WantID covering at least
// MinPercent of it, naming what was detected instead.
func checkLicense(text []byte) error {
	cov := licensecheck.Scan(text)
	var found []string
	for _, m := range cov.Match {
		found = append(found, m.ID)
		if m.ID == WantID && cov.Percent >= MinPercent {
			return nil
		}
	}
	if len(found) == 0 {
		return fmt.Errorf("no licence detected (want %s)", WantID)
	}
	return fmt.Errorf("detected %s covering %.1f%% of the text (want %s covering at least %.0f%%)",
		strings.Join(found, ", "), cov.Percent, WantID, MinPercent)
}
