# shellcheck shell=bash
# The repository's Go modules, for the scripts that act on all of them (scripts/tidy,
# scripts/release, scripts/install-check). Source it from the repository root.
#
# go.work is the one list of modules (`go work use ./dir` adds one); a module is published
# (users fetch it) unless its go.mod has a line starting with "// Module kind: development"
# (scripts/check-module-imports reads the same line). Published modules require each other at
# the version of the next release and carry no replace directive: scripts/tidy serves the
# working tree at that version from a local file proxy (scripts/modproxy) so that `go mod tidy`
# resolves it before the tag exists. Development-only modules keep their replace directives
# (they are never fetched).

GO=${GO:-go}
SQSWORKER_MODULE_PREFIX=github.com/sqsworker/sqsworker

# modules_all prints "PATH DIR" for every module of go.work, the root first.
modules_all() {
	GOWORK="$PWD/go.work" $GO list -m -f '{{.Path}} {{.Dir}}'
}

# module_is_development DIR: whether the module in DIR is development-only.
module_is_development() {
	grep -q '^// Module kind: development' "$1/go.mod"
}

# modules_published prints "PATH DIR" for every published module.
modules_published() {
	local listed path dir
	listed=$(modules_all) || return 1
	while read -r path dir; do
		module_is_development "$dir" || printf '%s %s\n' "$path" "$dir"
	done <<<"$listed"
}

# module_sibling_requires DIR prints "PATH VERSION" for each of this repository's modules
# that the go.mod in DIR requires.
module_sibling_requires() {
	(cd "$1" && GOWORK=off $GO mod edit -json) | python3 -c '
import json, sys
prefix = sys.argv[1]
for r in json.load(sys.stdin).get("Require") or []:
    if r["Path"] == prefix or r["Path"].startswith(prefix + "/"):
        print(r["Path"], r["Version"])
' "$SQSWORKER_MODULE_PREFIX"
}

# modules_required_version prints the one version at which the published modules require
# each other, and fails when they disagree (or none requires another).
modules_required_version() {
	local listed path dir versions
	listed=$(modules_published) || return 1
	versions=$(while read -r path dir; do module_sibling_requires "$dir" | awk '{print $2}'; done <<<"$listed" | sort -u)
	if [[ -z $versions ]]; then
		echo "modules: no published module requires another" >&2
		return 1
	fi
	if [[ $(wc -l <<<"$versions") -ne 1 ]]; then
		echo "modules: the published modules require each other at different versions: $(tr '\n' ' ' <<<"$versions")" >&2
		return 1
	fi
	printf '%s\n' "$versions"
}

# modules_proxy_env OUT VERSION writes the published modules at VERSION into the file proxy
# OUT and prints the environment under which a `go` command outside the workspace fetches
# them from it (everything else from the usual proxy, with checksums from the checksum
# database except for this repository's modules, which it does not know). The module cache
# is a new private one beside OUT (OUT/../modcache.XXXXXX; the caller removes OUT/..): a
# version built from the working tree must never land in the shared cache, where the real
# release would later meet it, and a cache directory must never be reused for other
# contents, since the go command indexes a module cache directory once (by its path, in
# GOCACHE) and trusts it never to change.
modules_proxy_env() {
	local out=$1 version=$2 listed dirs=() path dir cache upstream flags
	listed=$(modules_published) || return 1
	while read -r path dir; do dirs+=("$dir"); done <<<"$listed"
	rm -rf "$out" && mkdir -p "$out"
	(cd tools && GOWORK=off $GO run ./modproxy -out "$out" -version "$version" "${dirs[@]}") >&2 || return 1
	cache=$(mktemp -d "$(dirname "$out")/modcache.XXXXXX")
	# The shared module cache's download directory is itself a proxy: what it holds is
	# read from there instead of the network (the checksums are verified all the same).
	upstream="file://$($GO env GOMODCACHE)/cache/download,$($GO env GOPROXY)"
	flags="$($GO env GOFLAGS) -modcacherw"
	printf 'export GOWORK=off GOMODCACHE=%q GOPROXY=%q GONOSUMDB=%q GOFLAGS=%q\n' \
		"$cache" "file://$out,$upstream" "$SQSWORKER_MODULE_PREFIX" "${flags# }"
}

# modules_proxy_cleanup DIR removes DIR, the parent of a proxy made by modules_proxy_env
# with its module cache (written with -modcacherw, so removable).
modules_proxy_cleanup() {
	chmod -R u+w "$1" 2>/dev/null || true
	rm -rf "$1"
}
