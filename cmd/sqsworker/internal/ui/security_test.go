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

func testServer(t *testing.T, accessToken string) *Server {
	t.Helper()
	s, err := New(nopAPI{}, Config{Addr: "127.0.0.1:8089", Queues: []string{"http://sqs.local/000000000000/orders"}, AccessToken: accessToken})
	if err != nil {
		t.Fatal(err)
	}
	return s
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
var actions = []string{"/dlq/peek", "/redrive/dry-run", "/redrive/move", "/movetask/start", "/movetask/cancel", "/idempotency/release"}

// A GET (or HEAD) of any action answers 405 and calls nothing (nopAPI would panic),
// even with the form token in the query.
func TestActionsRefuseGET(t *testing.T) {
	t.Parallel()
	s := testServer(t, "")
	handler := s.Handler()
	for _, path := range actions {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			w := serveOnce(handler, request(method, path+"?queue=orders&csrf="+s.csrf, nil))
			if w.Code != http.StatusMethodNotAllowed || !strings.Contains(w.Header().Get("Allow"), "POST") {
				t.Errorf("%s %s = %d (Allow %q), want 405 allowing POST", method, path, w.Code, w.Header().Get("Allow"))
			}
		}
	}
}

// A POST without the form token, with a wrong one, or cross-origin is refused before any
// handler runs.
func TestActionsNeedTokenAndSameOrigin(t *testing.T) {
	t.Parallel()
	s := testServer(t, "")
	handler := s.Handler()
	for _, path := range actions {
		for name, form := range map[string]url.Values{"no token": {"queue": {"orders"}}, "wrong token": {"queue": {"orders"}, CSRFField: {"x" + s.csrf[1:]}}} {
			if w := serveOnce(handler, request(http.MethodPost, path, form)); w.Code != http.StatusForbidden {
				t.Errorf("POST %s with %s = %d, want 403", path, name, w.Code)
			}
		}
		r := request(http.MethodPost, path, url.Values{"queue": {"orders"}, CSRFField: {s.csrf}})
		r.Header.Set("Sec-Fetch-Site", "cross-site")
		r.Header.Set("Origin", "https://evil.example")
		if w := serveOnce(handler, r); w.Code != http.StatusForbidden {
			t.Errorf("cross-origin POST %s = %d, want 403", path, w.Code)
		}
	}
}

// The Host header must name the page's own address: a DNS-rebinding page sends its own
// host name.
func TestHostHeader(t *testing.T) {
	t.Parallel()
	guard, err := NewGuard("127.0.0.1:8089", "t", "")
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
		w := serveOnce(handler, r)
		if w.Code != want {
			t.Errorf("Host %q = %d, want %d", host, w.Code, want)
		}
		if w.Header().Get("Content-Security-Policy") == "" || w.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("Host %q: security headers missing: %v", host, w.Header())
		}
	}
	public, err := NewGuard("10.0.0.5:8089", "t", "0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/?"+AccessTokenParam+"=0123456789abcdef", nil)
	r.Host = "localhost:8089"
	if w := serveOnce(public.Protect(http.NotFoundHandler()), r); w.Code != http.StatusMisdirectedRequest {
		t.Errorf("a page on 10.0.0.5 accepted Host localhost: %d", w.Code)
	}
}

// With an access token, a request without it is refused; ?token= sets a cookie that
// then suffices.
func TestAccessToken(t *testing.T) {
	t.Parallel()
	s := testServer(t, "0123456789abcdef")
	handler := s.Handler()
	if w := serveOnce(handler, request(http.MethodGet, "/api/queues", nil)); w.Code != http.StatusUnauthorized {
		t.Fatalf("without the token = %d, want 401", w.Code)
	}
	if w := serveOnce(handler, request(http.MethodGet, "/api/queues?"+AccessTokenParam+"=wrong", nil)); w.Code != http.StatusUnauthorized {
		t.Fatalf("with a wrong token = %d, want 401", w.Code)
	}
	w := serveOnce(handler, request(http.MethodGet, "/api/queues?"+AccessTokenParam+"=0123456789abcdef", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("with the token = %d, want 200", w.Code)
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != AccessTokenCookie || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookies = %v", cookies)
	}
	r := request(http.MethodGet, "/api/queues", nil)
	r.AddCookie(cookies[0])
	if w := serveOnce(handler, r); w.Code != http.StatusOK {
		t.Fatalf("with the cookie = %d, want 200", w.Code)
	}
}
