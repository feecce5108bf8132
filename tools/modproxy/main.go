// Command modproxy writes a file-based Go module proxy (the layout GOPROXY=file://DIR reads:
// DIR/<module>/@v/list, <version>.info, <version>.mod and <version>.zip, as
// https://go.dev/ref/mod#goproxy-protocol describes) that serves each given module of this
// repository at one version, made from the working tree as it is now.
//
// Usage:
//
//	modproxy -out DIR -version vX.Y.Z MODULE_DIR...
//
// A module's files are the ones git lists for the checkout (tracked files plus untracked
// ones .gitignore does not exclude, so build outputs stay out), under MODULE_DIR and not in
// a nested module; golang.org/x/mod/zip makes the zip and checks it against the rules the go
// command applies (names, sizes, case collisions). scripts/modproxy runs it for `make tidy`,
// `make tidy-check`, `make release` and scripts/install-check.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "the proxy directory to write (created when missing)")
	version := flag.String("version", "", "the version every module is served at, e.g. v0.1.0")
	flag.Parse()
	if err := run(*out, *version, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func run(out, version string, dirs []string) error {
	if out == "" || len(dirs) == 0 {
		return errors.New("usage: modproxy -out DIR -version vX.Y.Z MODULE_DIR...")
	}
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("version %q is not a canonical semantic version (vX.Y.Z)", version)
	}
	for _, dir := range dirs {
		if err := serve(out, version, dir); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	return nil
}

// serve writes the four files of the module in dir at version into the proxy out.
func serve(out, version, dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	modPath := modfile.ModulePath(gomod)
	if modPath == "" {
		return errors.New("go.mod has no module line")
	}
	escaped, err := module.EscapePath(modPath)
	if err != nil {
		return err
	}
	files, err := moduleFiles(dir)
	if err != nil {
		return err
	}
	at := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	var zip bytes.Buffer
	if err := modzip.Create(&zip, module.Version{Path: modPath, Version: version}, files); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": info,
		version + ".mod":  gomod,
		version + ".zip":  zip.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("modproxy: %s@%s (%d files)\n", modPath, version, len(files))
	return nil
}

// moduleFiles lists the files of the module rooted at dir: what git lists under dir
// (tracked, and untracked but not ignored), less deleted files, non-regular files and the
// files of nested modules (directories below dir with a go.mod of their own).
func moduleFiles(dir string) ([]modzip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	listed, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var names []string
	nested := map[string]bool{} // directories (slash-separated, relative to dir) holding a go.mod
	for _, name := range strings.Split(strings.TrimRight(string(listed), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		names = append(names, name)
		if path.Base(name) == "go.mod" && name != "go.mod" {
			nested[path.Dir(name)] = true
		}
	}
	var files []modzip.File
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] || inNested(name, nested) {
			continue
		}
		seen[name] = true
		full := filepath.Join(dir, filepath.FromSlash(name))
		st, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			continue
		}
		files = append(files, file{name: name, full: full, info: st})
	}
	return files, nil
}

// inNested reports whether name lies in one of the nested module directories.
func inNested(name string, nested map[string]bool) bool {
	for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
		if nested[d] {
			return true
		}
	}
	return false
}

// file is one file of a module zip, read from the working tree.
type file struct {
	name string
	full string
	info fs.FileInfo
}

func (f file) Path() string                 { return f.name }
func (f file) Lstat() (fs.FileInfo, error)  { return f.info, nil }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.full) }
