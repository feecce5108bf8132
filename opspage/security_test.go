package opspage

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// nopAPI fails the test at any SQS call: none may happen in these tests.
type nopAPI struct{ API }

// testServer builds a page on 127.0.0.1:8089 with accessToken ("": a random one).
func testServer(t *testing.T, accessToken string) *Page {
	t.Helper()
	return testServerWith(t, Config{AccessToken: accessToken})
}

func testServerWith(t *testing.T, config Config) *Page {
	t.Helper()
	config.Addr = "127.0.0.1:8089"
	config.Queues = []string{"http://sqs.local/000000000000/orders"}
	s, err := New(nopAPI{}, config)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// signIn presents the server's access token once and returns the session cookie.
func signIn(t *testing.T, s *Page) *http.Cookie {
	t.Helper()
	w := serveOnce(http.Handler(s), request(http.MethodGet, s.config.Prefix+"/?"+AccessTokenParam+"="+s.AccessToken(), nil))
	cookies := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("presenting the token = %d, cookies %v; want 303 and a session cookie", w.Code, cookies)
	}
	return cookies[0]
}

// authorized adds the session cookie to r.
func authorized(r *http.Request, cookie *http.Cookie) *http.Request {
	r.AddCookie(cookie)
	return r
}

func request(method, target string, form url.Values) *http.Request {
	var r *http.Request
	if form != nil {
		r = httptest.NewRequest(method, target, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, target, nil)
	}
	r.Host = "127.0.0.1:8089"
	return r
}

func serveOnce(handler http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	return w
}

// actions are every state-changing route of the page.
var actions = []string{"/dlq/peek", "/redrive/dry-run", "/redrive/move", "/movetask/start", "/movetask/cancel", "/idempotency/release", "/outbox/retry", "/outbox/skip"}

// A GET (or HEAD) of any action answers 405 and calls nothing (nopAPI would panic),
// even with the form token in the query.
func TestActionsRefuseGET(t *testing.T) {
	t.Parallel()
	s := testServer(t, "")
	handler := http.Handler(s)
	cookie := signIn(t, s)
	for _, path := range actions {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			w := serveOnce(handler, authorized(request(method, path+"?queue=orders&csrf="+s.csrf, nil), cookie))
			if w.Code != http.StatusMethodNotAllowed || !strings.Contains(w.Header().Get("Allow"), "POST") {
				t.Errorf("%s %s = %d (Allow %q), want 405 allowing POST", method, path, w.Code, w.Header().Get("Allow"))
			}
		}
	}
}

// A POST without the form token, with a wrong one, or cross-origin is refused before any
// handler runs.
// A POST with the session cookie but without the form token, with a wrong one, or
// cross-origin (another site, or another port of 127.0.0.1: the same site, so
// SameSite=Strict still sends the cookie) is refused before any handler runs.
func TestActionsNeedFormTokenAndSameOrigin(t *testing.T) {
	t.Parallel()
	s := testServer(t, "")
	handler := http.Handler(s)
	cookie := signIn(t, s)
	for _, path := range actions {
		for name, form := range map[string]url.Values{"no form token": {"queue": {"orders"}}, "wrong form token": {"queue": {"orders"}, CSRFField: {"x" + s.csrf[1:]}}} {
			if w := serveOnce(handler, authorized(request(http.MethodPost, path, form), cookie)); w.Code != http.StatusForbidden {
				t.Errorf("POST %s with %s = %d, want 403", path, name, w.Code)
			}
		}
		for site, origin := range map[string]string{"cross-site": "https://evil.example", "same-site": "http://127.0.0.1:9999"} {
			r := authorized(request(http.MethodPost, path, url.Values{"queue": {"orders"}, CSRFField: {s.csrf}}), cookie)
			r.Header.Set("Sec-Fetch-Site", site)
			r.Header.Set("Origin", origin)
			if w := serveOnce(handler, r); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "cross-origin") {
				t.Errorf("POST %s from %s with the cookie and the form token = %d %q, want 403", path, origin, w.Code, w.Body.String())
			}
		}
	}
	// The same POST from the page itself passes the guard (an unknown dry run: 409,
	// no SQS call).
	r := authorized(request(http.MethodPost, "/redrive/move", url.Values{"plan": {"none"}, CSRFField: {s.csrf}}), cookie)
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set("Origin", "http://127.0.0.1:8089")
	if w := serveOnce(handler, r); w.Code != http.StatusConflict {
		t.Errorf("same-origin POST = %d, want 409 from the handler", w.Code)
	}
}

// The Host header must name the page's own address: a DNS-rebinding page sends its own
// host name.
func TestHostHeader(t *testing.T) {
	t.Parallel()
	guard, err := newGuard(guardConfig{Addr: "127.0.0.1:8089", CSRF: "t", AccessToken: "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	handler := guard.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for host, want := range map[string]int{
		"127.0.0.1:8089": http.StatusOK, "localhost:8089": http.StatusOK, "LOCALHOST:8089": http.StatusOK, "[::1]:8089": http.StatusOK,
		"evil.example:8089": http.StatusMisdirectedRequest, "127.0.0.1:9999": http.StatusMisdirectedRequest, "127.0.0.1": http.StatusMisdirectedRequest, "": http.StatusMisdirectedRequest,
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		r.Header.Set("Authorization", "Bearer 0123456789abcdef")
		w := serveOnce(handler, r)
		if w.Code != want {
			t.Errorf("Host %q = %d, want %d", host, w.Code, want)
		}
		if w.Header().Get("Content-Security-Policy") == "" || w.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("Host %q: security headers missing: %v", host, w.Header())
		}
	}
	public, err := newGuard(guardConfig{Addr: "10.0.0.5:8089", CSRF: "t", AccessToken: "0123456789abcdef", Secure: true})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/?"+AccessTokenParam+"=0123456789abcdef", nil)
	r.Host = "localhost:8089"
	if w := serveOnce(public.protect(http.NotFoundHandler()), r); w.Code != http.StatusMisdirectedRequest {
		t.Errorf("a page on 10.0.0.5 accepted Host localhost: %d", w.Code)
	}
	// On the scheme's default port a browser sends the host alone; on another port, or on
	// the default port of the other scheme, the port is required.
	for _, tc := range []struct {
		addr   string
		secure bool
		host   string
		want   int
	}{
		{"ops.example.com:443", true, "ops.example.com", http.StatusOK}, {"ops.example.com:443", true, "ops.example.com:443", http.StatusOK},
		{"ops.example.com:80", false, "OPS.example.com", http.StatusOK}, {"[2001:db8::1]:443", true, "[2001:db8::1]", http.StatusOK},
		{"ops.example.com:443", false, "ops.example.com", http.StatusMisdirectedRequest}, {"ops.example.com:8443", true, "ops.example.com", http.StatusMisdirectedRequest},
		{"ops.example.com:443", true, "evil.example", http.StatusMisdirectedRequest},
	} {
		g, err := newGuard(guardConfig{Addr: tc.addr, CSRF: "t", AccessToken: "0123456789abcdef", Secure: tc.secure})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = tc.host
		r.Header.Set("Authorization", "Bearer 0123456789abcdef")
		if w := serveOnce(g.protect(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), r); w.Code != tc.want {
			t.Errorf("Addr %s (secure %v), Host %q = %d, want %d", tc.addr, tc.secure, tc.host, w.Code, tc.want)
		}
	}
}

// routes are every route of the page, with a method.
var routes = [][2]string{
	{http.MethodGet, "/"}, {http.MethodGet, "/api/queues"}, {http.MethodGet, "/dlq?queue=orders"},
	{http.MethodGet, "/dlq/message?queue=orders&id=m"}, {http.MethodGet, "/dlq/body?queue=orders&id=m"},
	{http.MethodGet, "/idempotency"}, {http.MethodGet, "/jobs"}, {http.MethodGet, "/batches"}, {http.MethodGet, "/outbox"}, {http.MethodGet, "/static/refresh.js"}, {http.MethodGet, "/static/style.css"},
	{http.MethodHead, "/"}, {http.MethodGet, "/no-such-page"},
}

// Every route needs the access token, the POST actions included (with a valid form
// token, same-origin): without it, or with a wrong one, 401 and no SQS call. The
// default page has a random token: it used to have none on loopback, so any local user
// or process could redrive with the operator's credentials.
func TestEveryRouteNeedsTheAccessToken(t *testing.T) {
	t.Parallel()
	for name, token := range map[string]string{"random token": "", "given token": "0123456789abcdef"} {
		s := testServer(t, token)
		if len(s.AccessToken()) < 16 || (token != "" && s.AccessToken() != token) {
			t.Fatalf("%s: AccessToken() = %q", name, s.AccessToken())
		}
		handler := http.Handler(s)
		all := routes
		for _, path := range actions {
			all = append(all, [2]string{http.MethodPost, path})
		}
		for _, route := range all {
			for credential, set := range map[string]func(*http.Request){
				"nothing":                 func(*http.Request) {},
				"a wrong token":           func(r *http.Request) { r.URL.RawQuery += "&" + AccessTokenParam + "=x" + s.AccessToken()[1:] },
				"a wrong cookie":          func(r *http.Request) { r.AddCookie(&http.Cookie{Name: s.guard.cookie, Value: s.AccessToken()}) },
				"a wrong bearer":          func(r *http.Request) { r.Header.Set("Authorization", "Bearer x"+s.AccessToken()[1:]) },
				"the token in a POST url": func(r *http.Request) { r.URL.RawQuery += "&" + AccessTokenParam + "=" + s.AccessToken() },
			} {
				if credential == "the token in a POST url" && route[0] != http.MethodPost {
					continue
				}
				var r *http.Request
				if route[0] == http.MethodPost {
					r = request(route[0], route[1]+"?queue=orders", url.Values{"queue": {"orders"}, "plan": {"p"}, CSRFField: {s.csrf}})
					r.Header.Set("Sec-Fetch-Site", "same-origin")
				} else {
					r = request(route[0], route[1], nil)
				}
				set(r)
				if w := serveOnce(handler, r); w.Code != http.StatusUnauthorized {
					t.Errorf("%s: %s %s with %s = %d, want 401", name, route[0], route[1], credential, w.Code)
				}
			}
		}
	}
}

// The token is presented once: GET /?token=T answers 303 to the same page without the
// token and sets an HttpOnly, SameSite=Strict session cookie (not the token itself, and
// named after the port, so two pages on one host keep their own); the cookie or an
// Authorization: Bearer header then suffices.
func TestAccessTokenOnceThenCookie(t *testing.T) {
	t.Parallel()
	s := testServer(t, "0123456789abcdef")
	handler := http.Handler(s)
	w := serveOnce(handler, request(http.MethodGet, "/dlq?queue=orders&"+AccessTokenParam+"=0123456789abcdef", nil))
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/dlq?queue=orders" {
		t.Fatalf("presenting the token = %d to %q, want 303 to /dlq?queue=orders", w.Code, w.Header().Get("Location"))
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies = %v, want one", cookies)
	}
	cookie := cookies[0]
	if cookie.Name != "sqsworker-ui-8089" || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Secure ||
		cookie.Path != "/" || cookie.Value == "0123456789abcdef" || len(cookie.Value) < 32 {
		t.Fatalf("cookie = %+v, want sqsworker-ui-8089, HttpOnly, SameSite=Strict, Path=/, a session value", cookie)
	}
	if w := serveOnce(handler, authorized(request(http.MethodGet, "/api/queues", nil), cookie)); w.Code != http.StatusOK {
		t.Fatalf("with the cookie = %d, want 200", w.Code)
	}
	r := request(http.MethodGet, "/api/queues", nil)
	r.Header.Set("Authorization", "Bearer 0123456789abcdef")
	if w := serveOnce(handler, r); w.Code != http.StatusOK || len(w.Result().Cookies()) != 0 {
		t.Fatalf("with the bearer token = %d (cookies %v), want 200 and no cookie", w.Code, w.Result().Cookies())
	}
	// Another process's session: a restart makes a new one.
	other := signIn(t, testServer(t, "0123456789abcdef"))
	if w := serveOnce(handler, authorized(request(http.MethodGet, "/api/queues", nil), other)); w.Code != http.StatusUnauthorized {
		t.Fatalf("with another server's session cookie = %d, want 401", w.Code)
	}
}

// Served over TLS, the session cookie is Secure and __Host- prefixed.
func TestSecureCookie(t *testing.T) {
	t.Parallel()
	s := testServerWith(t, Config{Secure: true})
	cookie := signIn(t, s)
	if !cookie.Secure || cookie.Name != "__Host-sqsworker-ui-8089" || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie = %+v, want Secure, __Host-sqsworker-ui-8089, HttpOnly, SameSite=Strict", cookie)
	}
}

// A token shorter than 16 characters is refused.
func TestShortAccessToken(t *testing.T) {
	t.Parallel()
	if _, err := New(nopAPI{}, Config{Addr: "127.0.0.1:8089", Queues: []string{"http://sqs.local/000000000000/orders"}, AccessToken: "short"}); err == nil ||
		!strings.Contains(err.Error(), "at least 16") {
		t.Fatalf("New with a 5-character token: %v", err)
	}
}

// prefixed builds a page mounted under /ops.
func prefixed(t *testing.T, config Config) *Page {
	t.Helper()
	config.Prefix = "/ops/"
	return testServerWith(t, config)
}

// Under a prefix, the guard is the same on every route whether the prefix is still on
// the path (mux.Handle("/ops/", page)) or removed (http.StripPrefix): 401 without the
// token; the token sets a cookie of the prefix's path and redirects within the prefix;
// the actions still need the form token and the same origin.
func TestPrefixKeepsTheGuard(t *testing.T) {
	t.Parallel()
	s := prefixed(t, Config{AccessToken: "0123456789abcdef"})
	for mount, handler := range map[string]http.Handler{"prefix kept": s, "behind StripPrefix": http.StripPrefix("/ops", s)} {
		for _, route := range routes {
			if w := serveOnce(handler, request(route[0], "/ops"+route[1], nil)); w.Code != http.StatusUnauthorized {
				t.Errorf("%s: %s /ops%s without the token = %d, want 401", mount, route[0], route[1], w.Code)
			}
		}
		w := serveOnce(handler, request(http.MethodGet, "/ops/dlq?queue=orders&"+AccessTokenParam+"=0123456789abcdef", nil))
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/ops/dlq?queue=orders" {
			t.Fatalf("%s: presenting the token = %d to %q, want 303 to /ops/dlq?queue=orders", mount, w.Code, w.Header().Get("Location"))
		}
		cookies := w.Result().Cookies()
		if len(cookies) != 1 || cookies[0].Name != "sqsworker-ui-8089-ops" || cookies[0].Path != "/ops/" || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
			t.Fatalf("%s: cookies = %v, want sqsworker-ui-8089-ops, Path=/ops/, HttpOnly, SameSite=Strict", mount, cookies)
		}
		cookie := cookies[0]
		if w := serveOnce(handler, authorized(request(http.MethodGet, "/ops/api/queues", nil), cookie)); w.Code != http.StatusOK {
			t.Errorf("%s: /ops/api/queues with the cookie = %d, want 200", mount, w.Code)
		}
		for _, path := range actions {
			if w := serveOnce(handler, authorized(request(http.MethodPost, "/ops"+path, url.Values{"queue": {"orders"}}), cookie)); w.Code != http.StatusForbidden {
				t.Errorf("%s: POST /ops%s without the form token = %d, want 403", mount, path, w.Code)
			}
			if w := serveOnce(handler, authorized(request(http.MethodGet, "/ops"+path, nil), cookie)); w.Code != http.StatusMethodNotAllowed {
				t.Errorf("%s: GET /ops%s = %d, want 405", mount, path, w.Code)
			}
		}
	}
	// Over TLS a prefixed cookie cannot be __Host- (that needs the path /): __Secure-.
	secure := signIn(t, prefixed(t, Config{Secure: true}))
	if !secure.Secure || secure.Name != "__Secure-sqsworker-ui-8089-ops" || secure.Path != "/ops/" {
		t.Fatalf("cookie over TLS = %+v, want Secure __Secure-sqsworker-ui-8089-ops with Path=/ops/", secure)
	}
}

// A prefix that is not a clean path, or that starts with one of the page's own paths,
// is refused.
func TestBadPrefix(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"ops", "/ops page", "/a//b", "/dlq", "/static/x", "/<script>", "/ops?x=1"} {
		_, err := New(nopAPI{}, Config{Addr: "127.0.0.1:8089", Queues: []string{"http://sqs.local/000000000000/orders"}, Prefix: prefix})
		if err == nil || !strings.Contains(err.Error(), "prefix") {
			t.Errorf("prefix %q: %v, want refused", prefix, err)
		}
	}
}
