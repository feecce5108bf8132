package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

func TestUIUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shortFile := filepath.Join(dir, "short")
	if err := os.WriteFile(shortFile, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		env    []string
		args   []string
		stderr string
	}{
		"no queue":                  {args: []string{"ui"}, stderr: `"queue" not set`},
		"non-loopback":              {args: []string{"ui", "--queue", "q", "--addr", "10.0.0.5:8089"}, stderr: "not a loopback address"},
		"public without TLS":        {args: []string{"ui", "--queue", "q", "--addr", "10.0.0.5:8089", "--public"}, stderr: "--public needs --tls-cert and --tls-key"},
		"a certificate without key": {args: []string{"ui", "--queue", "q", "--tls-cert", "page.crt"}, stderr: "--tls-cert and --tls-key go together"},
		"token on the command line": {args: []string{"ui", "--queue", "q", "--token", "0123456789abcdef0123"}, stderr: "--token is refused: the command line is visible"},
		"short token in the environment": {env: []string{uiTokenVariable + "=abc"}, args: []string{"ui", "--queue", "q"},
			stderr: "the access token from SQSWORKER_UI_TOKEN has 3 characters: use at least 16"},
		"short token in a file": {args: []string{"ui", "--queue", "q", "--token-file", shortFile}, stderr: "has 3 characters: use at least 16"},
		"missing token file":    {args: []string{"ui", "--queue", "q", "--token-file", filepath.Join(dir, "none")}, stderr: "--token-file: open"},
		"all interfaces": {args: []string{"ui", "--queue", "q", "--addr", "0.0.0.0:8089", "--public", "--tls-cert", "c", "--tls-key", "k"},
			stderr: "not all interfaces"},
		"bad address": {args: []string{"ui", "--queue", "q", "--addr", "nowhere"}, stderr: `--addr "nowhere"`},
		"cloudwatch on the emulator": {args: []string{"ui", "--queue", "q", "--cloudwatch"},
			stderr: "--cloudwatch: ApproximateAgeOfOldestMessage is a CloudWatch metric, and SQS uses a custom endpoint"},
		"both outbox stores": {args: []string{"ui", "--queue", "q", "--outbox-table", "t", "--outbox-postgres", "postgres://db"},
			stderr: "give exactly one of --outbox-table (DynamoDB) and --outbox-postgres (PostgreSQL)"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := cli(t, tc.env, tc.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, stderr = %q; want %d and %q", r.code, r.stderr, exitUsage, tc.stderr)
			}
		})
	}
	if r := want(t, exitOK, "ui", "--help"); !strings.Contains(r.stdout, "DNS rebinding") || !strings.Contains(r.stdout, "process list") {
		t.Fatalf("ui --help does not explain the security rules:\n%s", r.stdout)
	}
}

// runningUI is a `sqsworker ui` process started by startUI.
type runningUI struct {
	lines []string // the first two lines it printed
}

// startUI starts `sqsworker ui` with args (plus --queue queueURL and a free loopback
// port) and env, reads the two lines it prints, and stops it with SIGTERM at the end of
// the test, which must exit 0.
func startUI(t *testing.T, env []string, queueURL string, args ...string) runningUI {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, binary, append([]string{"ui", "--queue", queueURL, "--addr", "127.0.0.1:0", "--interval", "1s"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reader := bufio.NewReader(stdout)
	var lines []string
	for range 2 {
		line, err := reader.ReadString('\n')
		if err != nil {
			_ = cmd.Process.Kill()
			t.Fatalf("reading what sqsworker ui printed: %v (stdout so far %q, stderr: %s)", err, lines, stderr.String())
		}
		lines = append(lines, strings.TrimSpace(line))
	}
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if err := testenv.Recv(t, done, time.Minute, "sqsworker ui to stop on SIGTERM"); err != nil {
			t.Errorf("sqsworker ui after SIGTERM: %v (stderr: %s)", err, stderr.String())
		}
	})
	return runningUI{lines: lines}
}

// address is the URL of the first line, "Operations page: URL".
func (u runningUI) address(t *testing.T) *url.URL {
	t.Helper()
	address, err := url.Parse(strings.TrimPrefix(u.lines[0], "Operations page: "))
	if err != nil || address.Host == "" {
		t.Fatalf("first line %q names no address: %v", u.lines[0], err)
	}
	return address
}

// browserClient keeps cookies, like a browser, and trusts roots (nil: the system's).
func browserClient(t *testing.T, roots *x509.CertPool) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: testenv.ReceiveTimeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
}

func get(t *testing.T, client *http.Client, target string) (int, string) {
	t.Helper()
	response, err := client.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	body, _ := io.ReadAll(response.Body)
	return response.StatusCode, string(body)
}

// TestUIServes starts `sqsworker ui` on the emulator with its default, random access
// token, printed once inside the address: without it every request is refused (401), the
// address sets the session cookie and redirects, the cookie then opens the page, a GET of
// an action answers 405, a cross-origin POST with the cookie 403; SIGTERM stops it (exit 0).
func TestUIServes(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	page := startUI(t, nil, queue.URL)
	address := page.address(t)
	token := address.Query().Get("token")
	if len(token) != 64 || !strings.Contains(page.lines[1], "random access token, printed only here") {
		t.Fatalf("printed %q: want the address with a 64-character random token", page.lines)
	}
	base := "http://" + address.Host
	anonymous := browserClient(t, nil)
	for _, path := range []string{"/", "/api/queues", "/static/refresh.js", "/redrive/move", "/?token=wrong" + token[5:]} {
		if code, _ := get(t, anonymous, base+path); code != http.StatusUnauthorized {
			t.Fatalf("GET %s without the token = %d, want 401", path, code)
		}
	}
	if response, err := anonymous.PostForm(base+"/redrive/move", url.Values{"plan": {"x"}}); err != nil || response.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST /redrive/move without the token = %v %v, want 401", response, err)
	}

	browser := browserClient(t, nil)
	name := queue.URL[strings.LastIndex(queue.URL, "/")+1:]
	code, body := get(t, browser, address.String())
	if code != http.StatusOK || !strings.Contains(body, name) {
		t.Fatalf("GET %s = %d:\n%s", address, code, body)
	}
	cookies := browser.Jar.Cookies(&url.URL{Scheme: "http", Host: address.Host})
	if len(cookies) != 1 || cookies[0].Value == token {
		t.Fatalf("cookies after the address = %v, want one session cookie that is not the token", cookies)
	}
	if code, _ := get(t, browser, base+"/redrive/move"); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /redrive/move with the cookie = %d, want 405", code)
	}
	_, dlqPage := get(t, browser, base+"/dlq?queue="+name)
	csrf := formToken(t, dlqPage)
	request, _ := http.NewRequest(http.MethodPost, base+"/redrive/move", strings.NewReader(url.Values{"plan": {"x"}, "csrf": {csrf}}.Encode()))
	request.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	request.Header.Set("Origin", "http://127.0.0.1:1")
	request.Header.Set("Sec-Fetch-Site", "same-site")
	response, err := browser.Do(request)
	if err != nil || response.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin POST with the cookie and the form token = %v %v, want 403", response, err)
	}
	response.Body.Close()
}

// formToken returns the per-process form token of a page.
func formToken(t *testing.T, page string) string {
	t.Helper()
	_, after, ok := strings.Cut(page, `name="csrf" value="`)
	token, _, _ := strings.Cut(after, `"`)
	if !ok || token == "" {
		t.Fatal("the page holds no form token")
	}
	return token
}

// The token from SQSWORKER_UI_TOKEN or --token-file is used and never printed.
func TestUITokenFromEnvironmentOrFile(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("from-the-file-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		env    []string
		args   []string
		token  string
		source string
	}{
		"environment": {env: []string{uiTokenVariable + "=from-the-environment-0123"}, token: "from-the-environment-0123", source: uiTokenVariable},
		"file":        {args: []string{"--token-file", file}, token: "from-the-file-0123456789", source: file},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			page := startUI(t, tc.env, queue.URL, tc.args...)
			if strings.Contains(strings.Join(page.lines, "\n"), tc.token) || !strings.Contains(page.lines[1], "with the token from "+tc.source) {
				t.Fatalf("printed %q: want the token's source and not the token", page.lines)
			}
			base := "http://" + page.address(t).Host
			browser := browserClient(t, nil)
			if code, _ := get(t, browser, base+"/"); code != http.StatusUnauthorized {
				t.Fatalf("GET / without the token = %d, want 401", code)
			}
			if code, _ := get(t, browser, base+"/?token="+tc.token); code != http.StatusOK {
				t.Fatalf("GET /?token= = %d, want 200", code)
			}
		})
	}
}

// With --tls-cert and --tls-key the page is served over HTTPS and the session cookie is
// Secure.
func TestUITLS(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	certFile, keyFile, roots := selfSigned(t)
	page := startUI(t, nil, queue.URL, "--tls-cert", certFile, "--tls-key", keyFile)
	address := page.address(t)
	if address.Scheme != "https" {
		t.Fatalf("address %s, want https", address)
	}
	browser := browserClient(t, roots)
	if code, _ := get(t, browser, address.String()); code != http.StatusOK {
		t.Fatalf("GET %s = %d, want 200", address, code)
	}
	cookies := browser.Jar.Cookies(&url.URL{Scheme: "https", Host: address.Host})
	if len(cookies) != 1 || !strings.HasPrefix(cookies[0].Name, "__Host-") {
		t.Fatalf("cookies = %v, want the __Host- session cookie", cookies)
	}
	// A plain HTTP request to the TLS listener gets net/http's 400, not the page.
	if code, body := get(t, browserClient(t, nil), "http://"+address.Host+"/"); code != http.StatusBadRequest || !strings.Contains(body, "HTTPS") {
		t.Fatalf("plain HTTP to the TLS page = %d %q", code, body)
	}
}

// selfSigned writes a certificate and key for 127.0.0.1 and returns their files and a
// pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sqsworker ui test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "page.crt"), filepath.Join(dir, "page.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	certificate, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(certificate)
	return certFile, keyFile, roots
}
