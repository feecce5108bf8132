package ui

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
func testServer(t *testing.T, accessToken string) *Server {
	t.Helper()
	return testServerWith(t, Config{AccessToken: accessToken})
}

func testServerWith(t *testing.T, config Config) *Server {
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
func signIn(t *testing.T, s *Server) *http.Cookie {
	t.Helper()
	w := serveOnce(s.Handler(), request(http.MethodGet, "/?"+AccessTokenParam+"="+s.AccessToken(), nil))
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
	handler := s.Handler()
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
	handler := s.Handler()
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
	guard, err := NewGuard(GuardConfig{Addr: "127.0.0.1:8089", CSRF: "t", AccessToken: "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	handler := guard.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
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
	public, err := NewGuard(GuardConfig{Addr: "10.0.0.5:8089", CSRF: "t", AccessToken: "0123456789abcdef", Secure: true})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/?"+AccessTokenParam+"=0123456789abcdef", nil)
	r.Host = "localhost:8089"
	if w := serveOnce(public.Protect(http.NotFoundHandler()), r); w.Code != http.StatusMisdirectedRequest {
		t.Errorf("a page on 10.0.0.5 accepted Host localhost: %d", w.Code)
	}
}

// routes are every route of the page, with a method.
var routes = [][2]string{
	{http.MethodGet, "/"}, {http.MethodGet, "/api/queues"}, {http.MethodGet, "/dlq?queue=orders"},
	{http.MethodGet, "/dlq/message?queue=orders&id=m"}, {http.MethodGet, "/dlq/body?queue=orders&id=m"},
	{http.MethodGet, "/idempotency"}, {http.MethodGet, "/jobs"}, {http.MethodGet, "/outbox"}, {http.MethodGet, "/static/refresh.js"}, {http.MethodGet, "/static/style.css"},
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
		handler := s.Handler()
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
	handler := s.Handler()
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
