package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/sqsworker/sqsworker/opspage"
)

// uiTokenVariable is the environment variable `sqsworker ui` reads its access token from.
const uiTokenVariable = "SQSWORKER_UI_TOKEN"

// uiAccess holds the flags that decide who may use the operations page.
type uiAccess struct {
	public            bool
	tokenFile         string
	argvToken         string // the refused --token
	certFile, keyFile string
}

// check refuses a token on the command line, TLS flags given alone, and a non-loopback
// address without --public and TLS.
func (u uiAccess) check(addr string) error {
	if u.argvToken != "" {
		return fmt.Errorf("--token is refused: the command line is visible to every local user in the process list; "+
			"put the token in %s or in a file read with --token-file", uiTokenVariable)
	}
	if (u.certFile == "") != (u.keyFile == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	if host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("--addr %s: name the address browsers will use (the page accepts only requests whose Host header names it), not all interfaces", addr)
	}
	if !u.public {
		return fmt.Errorf("--addr %s is not a loopback address: the page acts with your AWS credentials, so serving it beyond this machine needs --public (with TLS)", addr)
	}
	if u.certFile == "" {
		return fmt.Errorf("--public needs --tls-cert and --tls-key: the access token and the session cookie must not cross the network in clear text (--addr %s)", addr)
	}
	return nil
}

// token returns the access token and where it came from: --token-file, else
// SQSWORKER_UI_TOKEN, else "" and a token made by the page (the empty token: opspage.New
// makes a random one).
func (u uiAccess) token() (token, source string, err error) {
	if u.tokenFile != "" {
		data, err := os.ReadFile(u.tokenFile)
		if err != nil {
			return "", "", fmt.Errorf("--token-file: %w", err)
		}
		token, _, _ = strings.Cut(string(data), "\n")
		token, source = strings.TrimSpace(token), u.tokenFile
	} else if value, ok := os.LookupEnv(uiTokenVariable); ok {
		token, source = strings.TrimSpace(value), uiTokenVariable
	} else {
		return "", "", nil
	}
	if len(token) < opspage.MinAccessTokenLength {
		return "", "", fmt.Errorf("the access token from %s has %d characters: use at least %d (for example: openssl rand -hex 16)", source, len(token), opspage.MinAccessTokenLength)
	}
	return token, source, nil
}

// tlsConfig loads --tls-cert and --tls-key, or returns nil without them.
func (u uiAccess) tlsConfig() (*tls.Config, error) {
	if u.certFile == "" {
		return nil, nil
	}
	certificate, err := tls.LoadX509KeyPair(u.certFile, u.keyFile)
	if err != nil {
		return nil, fmt.Errorf("sqsworker: ui: loading --tls-cert %s and --tls-key %s: %w", u.certFile, u.keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{certificate}, MinVersion: tls.VersionTLS12}, nil
}
