package main

import (
	"runtime/debug"
	"strings"
)

// buildVersion describes the binary from its build information
// (runtime/debug.ReadBuildInfo): the version of the module the sqsworker command was built
// from (v0.1.0 after `go install github.com/sqsworker/sqsworker/cmd/sqsworker@v0.1.0`,
// "(devel)" when built inside a checkout), followed, when the go command recorded them
// (a build inside the git checkout without -buildvcs=false), by the commit and whether
// the tree had uncommitted changes. `sqsworker --version` prints it.
func buildVersion(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "unknown (no build information)"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var revision, modified string
	for _, setting := range info.Settings {
		switch setting.Key {
		case "vcs.revision":
			revision = setting.Value
		case "vcs.modified":
			modified = setting.Value
		}
	}
	var b strings.Builder
	b.WriteString(version)
	if revision != "" {
		b.WriteString(" (revision ")
		b.WriteString(revision)
		if modified == "true" {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	b.WriteString(", ")
	b.WriteString(info.GoVersion)
	return b.String()
}
