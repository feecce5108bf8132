package opspage

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Names of the per-process form token and of the access token's parameter and cookie.
const (
	// CSRFField is the form field every POST must carry, holding the per-process token.
	CSRFField = "csrf"
	// AccessTokenParam is the query parameter that hands the access token to the page
	// once, in a GET: the answer sets the session cookie and redirects to the same page
	// without it.
	AccessTokenParam = "token"
	// SessionCookie is the session cookie's name, followed by "-" and the page's port
	// (cookies are not kept per port, so two pages on one host would otherwise overwrite
	// each other's); served over TLS it is prefixed with "__Host-".
	SessionCookie = "sqsworker-ui"
	// MinAccessTokenLength is the shortest access token accepted, in bytes.
	MinAccessTokenLength = 16
)

// newToken returns 32 random bytes, hex-encoded.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error (Go 1.24+)
	return hex.EncodeToString(b)
}

// guardConfig configures a [guard].
type guardConfig struct {
	// Addr is the address browsers use: host:port with the actual port (not 0). Required.
	Addr string
	// Prefix is the page's path prefix ("" or "/ops"): the session cookie's path and the
	// sign-in redirect begin with it.
	Prefix string
	// CSRF is the per-process form token every POST must carry. Required.
	CSRF string
	// AccessToken is the token every request must carry, at least
	// [MinAccessTokenLength] bytes. Required.
	AccessToken string
	// Secure marks the session cookie Secure (and names it __Host-..., or __Secure-...
	// under a prefix, since a __Host- cookie must have the path /): set it when the page
	// is served over TLS.
	Secure bool
}

// guard is the security middleware of the page; see the package documentation,
// "Security". Build it with [newGuard].
type guard struct {
	hosts       map[string]bool
	prefix      string
	csrf        string
	accessToken string
	// session is the session cookie's value: random per process, so the access token
	// itself never sits in the browser's cookie jar, and a restart ends every session.
	session string
	cookie  string
	secure  bool
	origins *http.CrossOriginProtection
}

// newGuard returns the middleware for a page reached at config.Addr. The Host header
// must then name that port on 127.0.0.1, localhost or [::1] for a loopback address, or
// on the host of Addr otherwise. Errors: a bad Addr, a missing form token, an access
// token shorter than MinAccessTokenLength.
func newGuard(config guardConfig) (*guard, error) {
	host, port, err := net.SplitHostPort(config.Addr)
	if err != nil {
		return nil, err
	}
	if config.CSRF == "" {
		return nil, errors.New("opspage: the form token is empty")
	}
	if len(config.AccessToken) < MinAccessTokenLength {
		return nil, errors.New("opspage: the access token must have at least 16 characters")
	}
	// Cookies are kept per host and path, not per port: the name carries the port and
	// the prefix, so that pages on other ports or prefixes keep their own.
	cookie := SessionCookie + "-" + port + strings.ReplaceAll(config.Prefix, "/", "-")
	switch {
	case config.Secure && config.Prefix == "":
		cookie = "__Host-" + cookie
	case config.Secure:
		cookie = "__Secure-" + cookie
	}
	g := &guard{hosts: map[string]bool{}, prefix: config.Prefix, csrf: config.CSRF, accessToken: config.AccessToken, session: newToken(),
		cookie: cookie, secure: config.Secure, origins: http.NewCrossOriginProtection()}
	names := []string{host}
	if ip := net.ParseIP(host); host == "" || host == "localhost" || (ip != nil && ip.IsLoopback()) || (ip != nil && ip.IsUnspecified()) {
		names = append(names, "127.0.0.1", "localhost", "::1")
	}
	// A browser leaves the scheme's default port out of the Host header: a page reached
	// at https://ops.example.com (Addr ops.example.com:443, Secure) is asked for with Host
	// ops.example.com.
	bare := (port == "443" && config.Secure) || (port == "80" && !config.Secure)
	for _, name := range names {
		if name != "" && !(net.ParseIP(name) != nil && net.ParseIP(name).IsUnspecified()) {
			g.hosts[strings.ToLower(net.JoinHostPort(name, port))] = true
			if bare {
				g.hosts[strings.ToLower(strings.TrimSuffix(net.JoinHostPort(name, port), ":"+port))] = true
			}
		}
	}
	return g, nil
}

// protect wraps next with the guard's checks, in order: the Host header (421), the
// access token on every request (401), and for every method other than GET and HEAD
// same-origin and the form token (403). It also sets headers that forbid framing,
// foreign scripts, MIME sniffing, referrers and caching.
func (g *guard) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := w.Header()
		header.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		header.Set("X-Content-Type-Options", "nosniff")
		header.Set("X-Frame-Options", "DENY")
		header.Set("Referrer-Policy", "no-referrer")
		header.Set("Cache-Control", "no-store")
		if !g.hosts[strings.ToLower(r.Host)] {
			http.Error(w, "sqsworker operations page: Host header "+r.Host+" is not the address this page listens on (DNS rebinding guard)", http.StatusMisdirectedRequest)
			return
		}
		if g.signIn(w, r) {
			return
		}
		if !g.authorized(r) {
			header.Set("WWW-Authenticate", `Bearer realm="sqsworker"`)
			http.Error(w, "sqsworker operations page: this page needs its access token: open the page's address with ?"+AccessTokenParam+
				"=TOKEN once (`sqsworker ui` prints it), or send Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := g.origins.Check(r); err != nil {
				http.Error(w, "sqsworker operations page: cross-origin request refused", http.StatusForbidden)
				return
			}
			if !equal(r.PostFormValue(CSRFField), g.csrf) {
				http.Error(w, "sqsworker operations page: missing or wrong form token; reload the page and try again", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// signIn handles a GET or HEAD carrying the right access token in the query: it sets
// the session cookie and redirects (303) to the same URL without the token, so that
// the token stays out of the history and of the pages' links. It reports whether it
// answered.
func (g *guard) signIn(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	query := r.URL.Query()
	if !query.Has(AccessTokenParam) || !equal(query.Get(AccessTokenParam), g.accessToken) {
		return false
	}
	http.SetCookie(w, &http.Cookie{Name: g.cookie, Value: g.session, Path: g.prefix + "/", HttpOnly: true, Secure: g.secure, SameSite: http.SameSiteStrictMode})
	query.Del(AccessTokenParam)
	target := url.URL{Path: g.prefix + r.URL.Path, RawQuery: query.Encode()}
	http.Redirect(w, r, target.RequestURI(), http.StatusSeeOther)
	return true
}

// authorized checks the session cookie, or an Authorization: Bearer header with the
// access token (for scripts; it sets no cookie).
func (g *guard) authorized(r *http.Request) bool {
	if cookie, err := r.Cookie(g.cookie); err == nil && equal(cookie.Value, g.session) {
		return true
	}
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && equal(bearer, g.accessToken)
}

// equal compares secrets in constant time; an empty one never matches.
func equal(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
