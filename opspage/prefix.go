package opspage

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// prefixForm is what Config.Prefix may be: one or more segments of unreserved URL
// characters, so that it needs no escaping in a link, a cookie path or a cookie name.
var prefixForm = regexp.MustCompile(`^(/[A-Za-z0-9._~-]+)+$`)

// ownSegments are the first path segments of the page's routes: a prefix starting with
// one of them could not be told from a route of a page mounted behind http.StripPrefix.
var ownSegments = []string{"static", "api", "queue", "dlq", "redrive", "movetask", "idempotency", "outbox"}

// cleanPrefix checks Config.Prefix and drops its trailing slash ("/" is no prefix).
func cleanPrefix(prefix string) (string, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return "", nil
	}
	if !prefixForm.MatchString(prefix) {
		return "", fmt.Errorf("opspage: prefix %q: want /SEGMENT[/SEGMENT...] of letters, digits and ._~-", prefix)
	}
	first, _, _ := strings.Cut(prefix[1:], "/")
	for _, own := range ownSegments {
		if first == own {
			return "", fmt.Errorf("opspage: prefix %q: %q is a path of the page itself", prefix, "/"+own)
		}
	}
	return prefix, nil
}

// withoutPrefix returns r with prefix removed from the start of its path, when it is
// there (a page mounted as mux.Handle(prefix+"/", page)); a request whose path lacks it
// (behind http.StripPrefix) is returned as it is, an empty path as "/".
func withoutPrefix(r *http.Request, prefix string) *http.Request {
	path, cut := r.URL.Path, false
	if prefix != "" {
		if rest, ok := strings.CutPrefix(path, prefix); ok && (rest == "" || rest[0] == '/') {
			path, cut = rest, true
		}
	}
	if path == "" {
		path = "/"
	}
	if !cut && path == r.URL.Path {
		return r
	}
	stripped := new(http.Request)
	*stripped = *r
	stripped.URL = new(url.URL)
	*stripped.URL = *r.URL
	stripped.URL.Path = path
	if cut && r.URL.RawPath != "" {
		stripped.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, prefix)
	}
	return stripped
}
