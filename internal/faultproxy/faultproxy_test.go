package faultproxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/internal/faultproxy"
)

// TestFractionIsDeterministicAndLogged: with Fraction 0.3, calls 4, 7 and 10 of ten
// matching calls get the error answer; other operations pass; every call is logged.
func TestFractionIsDeterministicAndLogged(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	defer target.Close()
	proxy := faultproxy.New(t, target.URL)
	proxy.SetRules(faultproxy.Rule{Operations: []string{"DeleteMessageBatch"}, Fraction: 0.3, Status: 500, Code: "InternalError", Message: "boom"})
	call := func(operation string) int {
		request, _ := http.NewRequest(http.MethodPost, proxy.URL, strings.NewReader("{}"))
		request.Header.Set("X-Amz-Target", "AmazonSQS."+operation)
		request.Header.Set("Amz-Sdk-Request", "attempt=1; max=3")
		response, err := http.DefaultClient.Do(request)
		if err != nil {
			t.Fatal(err)
		}
		defer response.Body.Close()
		return response.StatusCode
	}
	var faulted []int
	for i := 1; i <= 10; i++ {
		if call("DeleteMessageBatch") == 500 {
			faulted = append(faulted, i)
		}
		if status := call("ReceiveMessage"); status != 200 {
			t.Errorf("ReceiveMessage answered %d, want 200", status)
		}
	}
	if len(faulted) != 3 || faulted[0] != 4 || faulted[1] != 7 || faulted[2] != 10 {
		t.Errorf("faulted calls %v, want [4 7 10]", faulted)
	}
	calls := proxy.Calls()
	if len(calls) != 20 || calls[0].Attempt != 1 || calls[0].Operation != "DeleteMessageBatch" {
		t.Errorf("log = %+v; want 20 calls with operation and attempt", calls)
	}
}
