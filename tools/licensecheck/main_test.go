package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRepositoryLicenseIsDetectedAsApache(t *testing.T) {
	if err := checkLicenseFile(filepath.Join("..", "..", "LICENSE")); err != nil {
		t.Fatal(err)
	}
}

func TestLicenseWithExtraTextIsRefused(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	extra := strings.Repeat("This product also ships terms of its own that nobody reviewed here. ", 60)
	err = checkLicense(append(text, extra...))
	if err == nil || !strings.Contains(err.Error(), "detected Apache-2.0 covering") {
		t.Fatalf("checkLicense(licence plus extra text) = %v, want a coverage refusal", err)
	}
}

func TestOtherLicenseIsRefused(t *testing.T) {
	mit := `Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`
	err := checkLicense([]byte(mit))
	if err == nil || !strings.Contains(err.Error(), "MIT") {
		t.Fatalf("checkLicense(MIT) = %v, want a refusal naming MIT", err)
	}
	if err := checkLicense([]byte("All rights reserved.")); err == nil || !strings.Contains(err.Error(), "no licence detected") {
		t.Fatalf("checkLicense(no licence) = %v, want no licence detected", err)
	}
}

func TestDevelopmentModulesAreRecognised(t *testing.T) {
	if !isDevelopment([]byte("// a comment\n// Module kind: development (never fetched)\nmodule x\n")) {
		t.Fatal("a go.mod with the development marker is not recognised")
	}
	if isDevelopment([]byte("// The operations CLI.\nmodule x\n")) {
		t.Fatal("a go.mod without the marker is taken for development")
	}
}
