package poller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// HealthCheckPath is the path the health endpoint serves (Config.HealthCheckAddress).
const HealthCheckPath = "/healthz"

// MetricsPath is the path Config.MetricsHandler is served at, on the health endpoint's
// address.
const MetricsPath = "/metrics"

// healthCheckTimeout bounds CheckHealth when its context has no deadline, and the
// health server's shutdown.
const healthCheckTimeout = 5 * time.Second

// healthServer serves GET /healthz: 200 while the server runs and can receive; 503,
// with the reason as the body, once it is stopping or while abandoned handlers hold
// every concurrency slot.
type healthServer struct {
	listener net.Listener
	server   *http.Server
	logger   *slog.Logger
	done     chan struct{}
}

type healthServerParams struct {
	address string
	status  func() (healthy bool, reason string)
	metrics http.Handler
	logger  *slog.Logger
}

// newHealthServer listens on the address at once, so a bad or busy address fails Start.
func newHealthServer(params healthServerParams) (*healthServer, error) {
	listener, err := net.Listen("tcp", params.address)
	if err != nil {
		return nil, fmt.Errorf("poller: Config.HealthCheckAddress %q: %w", params.address, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+HealthCheckPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		healthy, reason := params.status()
		if !healthy {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = io.WriteString(w, reason+"\n")
	})
	if params.metrics != nil {
		mux.Handle("GET "+MetricsPath, params.metrics)
	}
	return &healthServer{
		listener: listener,
		server:   &http.Server{Handler: mux, ReadHeaderTimeout: healthCheckTimeout},
		logger:   params.logger,
		done:     make(chan struct{}),
	}, nil
}

// address is where the endpoint listens (useful with port 0).
func (h *healthServer) address() string {
	return h.listener.Addr().String()
}

func (h *healthServer) start(wg *sync.WaitGroup) {
	wg.Go(func() {
		defer close(h.done)
		if err := h.server.Serve(h.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.logger.Error("poller: health endpoint stopped", "error", err)
		}
	})
}

func (h *healthServer) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), healthCheckTimeout)
	defer cancel()
	if err := h.server.Shutdown(ctx); err != nil {
		_ = h.server.Close()
	}
	<-h.done
}

// CheckHealth asks the health endpoint of a server at address (host:port, as in
// Config.HealthCheckAddress, or a full http:// URL) whether it is running. It returns
// nil on 200 and an error otherwise (with the status and the server's reason), for a binary's `healthcheck` sub-command in
// images without curl:
//
//	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
//		if err := poller.CheckHealth(context.Background(), "127.0.0.1:8080"); err != nil {
//			os.Exit(1)
//		}
//		os.Exit(0)
//	}
//
// Without a deadline on ctx, it gives up after 5 s.
func CheckHealth(ctx context.Context, address string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, healthCheckTimeout)
		defer cancel()
	}
	url := address
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		url = "http://" + address + HealthCheckPath
	}
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("poller: health check %s: %w", address, err)
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return fmt.Errorf("poller: health check %s: %w", address, err)
	}
	defer response.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(response.Body, 1024))
	if response.StatusCode != http.StatusOK {
		return fmt.Errorf("poller: health check %s: status %d: %s", address, response.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}
