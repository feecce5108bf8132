package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/examples/webhook/delivery"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/worker"
)

func env(values map[string]string) func(string) string {
	return func(name string) string { return values[name] }
}

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    config
		wantErr []string
	}{
		{name: "defaults", env: map[string]string{envTable: "t"}, want: config{Table: "t"}},
		{name: "delivery timeout", env: map[string]string{envTable: "t", envDeliveryTimeout: "3s"}, want: config{Table: "t", DeliveryTimeout: 3 * time.Second}},
		{name: "nothing set", env: map[string]string{}, wantErr: []string{"SQSWORKER_IDEMPOTENCY_TABLE is empty"}},
		{name: "metrics off", env: map[string]string{envTable: "t", envMetrics: "off"}, want: config{Table: "t"}},
		{
			name: "metrics on the health address",
			env:  map[string]string{envTable: "t", envMetrics: "prometheus", poller.EnvHealthAddress: "127.0.0.1:8080"},
			want: config{Table: "t", Metrics: true},
		},
		{
			name:    "metrics without a health address",
			env:     map[string]string{envTable: "t", envMetrics: "prometheus"},
			wantErr: []string{"SQSWORKER_METRICS=prometheus needs SQSWORKER_HEALTH_ADDRESS"},
		},
		{
			name: "allowed networks",
			env:  map[string]string{envTable: "t", envAllowNetworks: "127.0.0.1/32, 10.0.0.0/8"},
			want: config{Table: "t", AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}},
		},
		{name: "bad network", env: map[string]string{envTable: "t", envAllowNetworks: "localhost"}, wantErr: []string{`SQSWORKER_DELIVERY_ALLOW_NETWORKS: "localhost" is neither an IP prefix`}},
		{name: "unknown metrics", env: map[string]string{envTable: "t", envMetrics: "statsd"}, wantErr: []string{`SQSWORKER_METRICS="statsd" is neither prometheus nor off`}},
		{
			name:    "every value wrong",
			env:     map[string]string{envDeliveryTimeout: "5"},
			wantErr: []string{"SQSWORKER_IDEMPOTENCY_TABLE is empty", `SQSWORKER_DELIVERY_TIMEOUT="5"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := loadConfig(env(tc.env))
			if len(tc.wantErr) == 0 {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Errorf("loadConfig = %+v, %v\nwant %+v", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatal("loadConfig succeeded, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestRuntimeOptionsDefaultOnlyWhatTheEnvironmentLeavesUnset(t *testing.T) {
	options := runtimeOptions(env(map[string]string{}))
	if options.Poller.HandlerTimeout != defaultHandlerTimeout || options.Poller.Backoff.Base != defaultBackoff.Base || options.Poller.Backoff.Cap != defaultBackoff.Cap || len(options.Lambda) != 1 {
		t.Errorf("with nothing set: handler timeout %s, backoff %+v, %d Lambda options; want the example's defaults",
			options.Poller.HandlerTimeout, options.Poller.Backoff, len(options.Lambda))
	}
	options = runtimeOptions(env(map[string]string{poller.EnvHandlerTimeout: "1m", worker.EnvBackoffCap: "5m"}))
	if options.Poller.HandlerTimeout != 0 || options.Poller.Backoff.Base != 0 || options.Poller.Backoff.Cap != 0 || len(options.Lambda) != 0 {
		t.Errorf("with the variables set the example must leave them to worker.Run; got %+v", options.Poller)
	}
}

func TestHealthcheck(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != poller.HealthCheckPath {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(status.Load()))
	}))
	defer server.Close()
	address := strings.TrimPrefix(server.URL, "http://")
	if code := healthcheck([]string{address}); code != 0 {
		t.Errorf("healthcheck of a running worker = %d, want 0", code)
	}
	status.Store(http.StatusServiceUnavailable)
	if code := healthcheck([]string{address}); code != 1 {
		t.Errorf("healthcheck of a stopping worker = %d, want 1", code)
	}
	t.Setenv(poller.EnvHealthAddress, "")
	if code := healthcheck(nil); code != 1 {
		t.Errorf("healthcheck without an address = %d, want 1", code)
	}
}

// TestHandlerSendsNothingWithoutAKey: a delivery whose body the idempotency parser
// rejects (a trailing "]") sent 3 times is dead-lettered 3 times and posted never; a
// valid one sent 3 times is posted once.
func TestHandlerSendsNothingWithoutAKey(t *testing.T) {
	var posts atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1) }))
	defer server.Close()
	handler := newHandler(idempotency.NewMemoryStore(), config{Table: "t", AllowNetworks: loopback}, slog.New(slog.DiscardHandler))
	valid := `{"deliveryId":"d-1","url":"` + server.URL + `","payload":{}}`
	for range 3 {
		outcome := sqsworker.Classify(handler.Handle(context.Background(), &sqsworker.Message{ID: "m", Body: valid + "]", ReceiveCount: 1}))
		if outcome.Kind != sqsworker.OutcomeDeadLetter || outcome.Reason != delivery.ReasonMalformedBody {
			t.Errorf("trailing ]: %s %q, want dead-letter %q", outcome.Kind, outcome.Reason, delivery.ReasonMalformedBody)
		}
	}
	for range 3 {
		if err := handler.Handle(context.Background(), &sqsworker.Message{ID: "m", Body: valid, ReceiveCount: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("%d POSTs, want 1 (the valid delivery, once)", n)
	}
}

// loopback lets the test's receiver on 127.0.0.1 through the destination guard.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// TestHandlerRefusesLoopbackByDefault: the worker's handler, configured from an
// environment without SQSWORKER_DELIVERY_ALLOW_NETWORKS, dead-letters a delivery to a
// receiver on 127.0.0.1 as ForbiddenDestination without posting; with the variable set
// to 127.0.0.1/32 (as the demo sets it for its receiver) it posts.
func TestHandlerRefusesLoopbackByDefault(t *testing.T) {
	var posts atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1) }))
	defer server.Close()
	body := `{"deliveryId":"d-1","url":"` + server.URL + `","payload":{}}`
	for _, allow := range []string{"", "127.0.0.1/32"} {
		cfg, err := loadConfig(env(map[string]string{envTable: "t", envAllowNetworks: allow}))
		if err != nil {
			t.Fatal(err)
		}
		handler := newHandler(idempotency.NewMemoryStore(), cfg, slog.New(slog.DiscardHandler))
		err = handler.Handle(context.Background(), &sqsworker.Message{ID: "m", Body: body, ReceiveCount: 1})
		outcome := sqsworker.Classify(err)
		switch {
		case allow == "" && (outcome.Kind != sqsworker.OutcomeDeadLetter || outcome.Reason != delivery.ReasonForbiddenDestination):
			t.Errorf("no allowed networks: %s %q (%v), want dead-letter %q", outcome.Kind, outcome.Reason, err, delivery.ReasonForbiddenDestination)
		case allow != "" && err != nil:
			t.Errorf("%s allowed: %v", allow, err)
		}
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("%d POSTs, want 1 (with 127.0.0.1/32 allowed)", n)
	}
}
