package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
)

// Names of the per-process form token and of the access-token cookie and parameter.
const (
	// CSRFField is the form field every POST must carry, holding the per-process token.
	CSRFField = "csrf"
	// AccessTokenParam is the query parameter that hands the access token to the page
	// once (it is then kept in the AccessTokenCookie cookie).
	AccessTokenParam  = "token"
	AccessTokenCookie = "sqsworker-ui-token"
)

// newToken returns 32 random bytes, hex-encoded.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error (Go 1.24+)
	return hex.EncodeToString(b)
}

// Guard is the security middleware of the page; see the package documentation,
// "Security". Build it with [NewGuard].
type Guard struct {
	hosts       map[string]bool
	csrf        string
	accessToken string
	origins     *http.CrossOriginProtection
}

// NewGuard returns the middleware for a server listening on addr (host:port, as given
// to net.Listen; port 0 is not allowed: pass the listener's actual address). The Host
// header must then name that port on 127.0.0.1, localhost or [::1] for a loopback addr,
// or on the host of addr otherwise. csrf is the per-process form token; accessToken, if
// not empty, is required on every request.
func NewGuard(addr, csrf, accessToken string) (*Guard, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	g := &Guard{hosts: map[string]bool{}, csrf: csrf, accessToken: accessToken, origins: http.NewCrossOriginProtection()}
	names := []string{host}
	if ip := net.ParseIP(host); host == "" || host == "localhost" || (ip != nil && ip.IsLoopback()) || (ip != nil && ip.IsUnspecified()) {
		names = append(names, "127.0.0.1", "localhost", "::1")
	}
	for _, name := range names {
		if name != "" && !(net.ParseIP(name) != nil && net.ParseIP(name).IsUnspecified()) {
			g.hosts[strings.ToLower(net.JoinHostPort(name, port))] = true
		}
	}
	return g, nil
}

// Protect wraps next with the guard's checks: Host header, access token, and for every
// method other than GET and HEAD same-origin and the form token. It also sets headers
// that forbid framing, foreign scripts, MIME sniffing and caching.
func (g *Guard) Protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := w.Header()
		header.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		header.Set("X-Content-Type-Options", "nosniff")
		header.Set("X-Frame-Options", "DENY")
		header.Set("Referrer-Policy", "no-referrer")
		header.Set("Cache-Control", "no-store")
		if !g.hosts[strings.ToLower(r.Host)] {
			http.Error(w, "sqsworker ui: Host header "+r.Host+" is not the address this page listens on (DNS rebinding guard)", http.StatusMisdirectedRequest)
			return
		}
		if g.accessToken != "" && !g.authorized(w, r) {
			http.Error(w, "sqsworker ui: this page needs its access token: open it once as /?"+AccessTokenParam+"=TOKEN", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := g.origins.Check(r); err != nil {
				http.Error(w, "sqsworker ui: cross-origin request refused", http.StatusForbidden)
				return
			}
			if !equal(r.PostFormValue(CSRFField), g.csrf) {
				http.Error(w, "sqsworker ui: missing or wrong form token; reload the page and try again", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authorized checks the access token, from the cookie or the query parameter; a valid
// parameter sets the cookie.
func (g *Guard) authorized(w http.ResponseWriter, r *http.Request) bool {
	if cookie, err := r.Cookie(AccessTokenCookie); err == nil && equal(cookie.Value, g.accessToken) {
		return true
	}
	if equal(r.URL.Query().Get(AccessTokenParam), g.accessToken) {
		http.SetCookie(w, &http.Cookie{Name: AccessTokenCookie, Value: g.accessToken, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		return true
	}
	return false
}

func equal(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
