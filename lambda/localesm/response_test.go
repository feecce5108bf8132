package localesm

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	ids := map[string]bool{"m1": true, "m2": true, "m3": true}
	tests := []struct {
		name       string
		status     int
		header     http.Header
		body       string
		noReport   bool
		wantFailed []string
		wantErr    error
	}{
		{name: "empty body", body: ``},
		{name: "null response", body: `null`},
		{name: "empty response object", body: `{}`},
		{name: "unrelated keys only", body: `{"statusCode":200}`},
		{name: "empty list", body: `{"batchItemFailures":[]}`},
		{name: "null list", body: `{"batchItemFailures":null}`},
		{name: "one failure", body: `{"batchItemFailures":[{"itemIdentifier":"m2"}]}`, wantFailed: []string{"m2"}},
		{name: "failures in response order, repeats once", body: `{"batchItemFailures":[{"itemIdentifier":"m3"},{"itemIdentifier":"m1"},{"itemIdentifier":"m3"}]}`, wantFailed: []string{"m3", "m1"}},
		{name: "empty itemIdentifier", body: `{"batchItemFailures":[{"itemIdentifier":""}]}`, wantErr: ErrMalformedResponse},
		{name: "null itemIdentifier", body: `{"batchItemFailures":[{"itemIdentifier":null}]}`, wantErr: ErrMalformedResponse},
		{name: "missing itemIdentifier", body: `{"batchItemFailures":[{}]}`, wantErr: ErrMalformedResponse},
		{name: "unknown itemIdentifier", body: `{"batchItemFailures":[{"itemIdentifier":"m9"}]}`, wantErr: ErrMalformedResponse},
		{name: "number itemIdentifier", body: `{"batchItemFailures":[{"itemIdentifier":42}]}`, wantErr: ErrMalformedResponse},
		{name: "capitalised list key", body: `{"BatchItemFailures":[{"itemIdentifier":"m2"}]}`, wantErr: ErrMalformedResponse},
		{name: "capitalised item key", body: `{"batchItemFailures":[{"ItemIdentifier":"m2"}]}`, wantErr: ErrMalformedResponse},
		{name: "list is not a list", body: `{"batchItemFailures":"m2"}`, wantErr: ErrMalformedResponse},
		{name: "invalid JSON", body: `{"batchItemFailures":[`, wantErr: ErrMalformedResponse},
		{name: "JSON string", body: `"ok"`, wantErr: ErrMalformedResponse},
		{name: "function error body (RIE)", body: `{"errorMessage":"boom","errorType":"BatchError"}`, wantErr: ErrFunction},
		{name: "function error header", header: http.Header{"X-Amz-Function-Error": {"Unhandled"}}, body: `{}`, wantErr: ErrFunction},
		{name: "crash (HTTP 502)", status: http.StatusBadGateway, body: `{"errorType":"Runtime.ExitError"}`, wantErr: ErrFunction},
		{name: "timeout (RIE)", body: `Task timed out after 3.00 seconds`, wantErr: ErrFunction},
		{name: "without ReportBatchItemFailures failures are ignored", noReport: true, body: `{"batchItemFailures":[{"itemIdentifier":"m2"}]}`},
		{name: "without ReportBatchItemFailures a malformed body is ignored", noReport: true, body: `{"batchItemFailures":[{"itemIdentifier":""}]}`},
		{name: "without ReportBatchItemFailures a function error still fails", noReport: true, body: `{"errorMessage":"boom","errorType":"errorString"}`, wantErr: ErrFunction},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status := tc.status
			if status == 0 {
				status = http.StatusOK
			}
			header := tc.header
			if header == nil {
				header = http.Header{}
			}
			failed, err := decide(status, header, []byte(tc.body), ids, !tc.noReport)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			assert.Equal(t, tc.wantFailed, failed, "failed ids")
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	valid := Config{QueueURL: "q", FunctionURLs: []string{"http://f"}}
	tests := []struct {
		name   string
		modify func(*Config)
		want   []string // substrings of the joined error; none for a valid config
	}{
		{name: "defaults", modify: func(*Config) {}},
		{name: "window allows large batches", modify: func(c *Config) { c.BatchSize, c.BatchingWindow = 100, time.Second }},
		{name: "everything missing", modify: func(c *Config) { *c = Config{} }, want: []string{"QueueURL", "function URL", "MaximumConcurrency 0"}},
		{name: "large batch without window", modify: func(c *Config) { c.BatchSize = 11 }, want: []string{"needs a BatchingWindow"}},
		{name: "window too long, wait too long", modify: func(c *Config) { c.BatchingWindow, c.WaitTime = 301*time.Second, 21*time.Second },
			want: []string{"BatchingWindow 5m1s", "WaitTime 21s"}},
		{name: "batch too large", modify: func(c *Config) { c.BatchSize, c.BatchingWindow = 10001, time.Second }, want: []string{"BatchSize 10001"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid
			tc.modify(&cfg)
			err := cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}
