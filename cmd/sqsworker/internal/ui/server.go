package ui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/redrive"
)

//go:embed templates/*.html static/*
var files embed.FS

// Defaults of [Config].
const (
	DefaultInterval = 5 * time.Second
	DefaultPeekMax  = 100
	// maxKept bounds the dry runs kept for confirmation.
	maxKept = 100
	// planLifetime is how long a dry run can be confirmed.
	planLifetime = 30 * time.Minute
)

// API is the part of the SQS client the page uses: the redrive package's mover, peek
// and move tasks, and the refresher. *sqs.Client satisfies it.
type API interface {
	redrive.MoverAPI
	redrive.MoveTaskAPI
	RefresherAPI
}

// Config describes an operations page.
type Config struct {
	// Addr is the address the server listens on, host:port with the actual port (the
	// Host header of every request must name it; see [NewGuard]). Required.
	Addr string
	// Queues are the URLs of the queues to show, in order; their dead-letter queues are
	// found from their redrive policies. At least one.
	Queues []string
	// MetricsURLs are workers' /metrics endpoints (otelsqsworker's Prometheus handler);
	// when set, throughput and failure rate come from their counters, otherwise from the
	// change of the SQS counts.
	MetricsURLs []string
	// Interval is the refresh interval (at least [MinInterval]); if zero,
	// [DefaultInterval].
	Interval time.Duration
	// PeekMax is how many dead letters one look receives at most; if zero,
	// [DefaultPeekMax].
	PeekMax int
	// Store is the idempotency store of the records to look up and release, nil to
	// hide that part. Table names it on the page.
	Store idempotency.Store
	Table string
	// KeyPrefix is the middleware's Config.KeyPrefix: a key typed on the page is
	// stored as idempotency.StoredKey(KeyPrefix, key).
	KeyPrefix string
	// Jobs is the store of the job records the page shows by job id (GET /jobs?id=),
	// linked from a dead letter's job-id attribute; nil to hide that part.
	Jobs *jobs.Store
	// Outbox is the transactional outbox whose backlog, failed entries and parked FIFO
	// groups the page shows, with Retry and Skip actions; nil to hide that part.
	Outbox Outbox
	// AccessToken is required on every request (see the package documentation,
	// "Security"), at least [MinAccessTokenLength] bytes; if empty, New makes a random
	// one ([Server.AccessToken]).
	AccessToken string
	// Secure says the page is served over TLS: the session cookie is then Secure.
	Secure bool
	// Logger receives the actions taken; if nil, logs are discarded.
	Logger *slog.Logger
}

// Server is the operations page. Build it with [New], start its refresher with
// Start, serve Handler, and call Stop at the end.
type Server struct {
	config    Config
	api       API
	refresher *Refresher
	guard     *Guard
	csrf      string
	pages     map[string]*template.Template
	logger    *slog.Logger

	mu    sync.Mutex
	peeks map[string]*peek // by queue name: the last look at its dead-letter queue
	plans map[string]*plan // by id: dry runs waiting for confirmation
}

// New checks config and builds the page. Errors: a bad Addr, no queues, an interval
// below MinInterval, an access token shorter than MinAccessTokenLength, unparsable
// templates (a build defect).
func New(api API, config Config) (*Server, error) {
	if config.Interval == 0 {
		config.Interval = DefaultInterval
	}
	if config.PeekMax <= 0 {
		config.PeekMax = DefaultPeekMax
	}
	logger := config.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	refresher, err := NewRefresher(api, config.Queues, config.MetricsURLs, config.Interval)
	if err != nil {
		return nil, err
	}
	if config.AccessToken == "" {
		config.AccessToken = newToken()
	}
	csrf := newToken()
	guard, err := NewGuard(GuardConfig{Addr: config.Addr, CSRF: csrf, AccessToken: config.AccessToken, Secure: config.Secure})
	if err != nil {
		return nil, fmt.Errorf("ui: address %q: %w", config.Addr, err)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Server{
		config: config, api: api, refresher: refresher, guard: guard, csrf: csrf, pages: pages, logger: logger,
		peeks: map[string]*peek{}, plans: map[string]*plan{},
	}, nil
}

// Start makes the refresher's first poll and starts its polling goroutine (see
// [Refresher.Start]).
func (s *Server) Start(ctx context.Context) { s.refresher.Start(ctx) }

// Stop stops the refresher and waits for its goroutine.
func (s *Server) Stop() { s.refresher.Stop() }

// AccessToken returns the token every request must carry (Config.AccessToken, or the
// random one New made): hand it to the browser once as /?token=TOKEN.
func (s *Server) AccessToken() string { return s.config.AccessToken }

// Refresher returns the server's refresher.
func (s *Server) Refresher() *Refresher { return s.refresher }

// Handler returns the page's routes behind the [Guard]. State-changing routes accept
// POST only (net/http answers any other method with 405 Method Not Allowed).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(files, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.queuesPage)
	mux.HandleFunc("GET /api/queues", s.queuesJSON)
	mux.HandleFunc("GET /dlq", s.dlqPage)
	mux.HandleFunc("POST /dlq/peek", s.dlqPeek)
	mux.HandleFunc("GET /dlq/message", s.messagePage)
	mux.HandleFunc("GET /dlq/body", s.messagePage)
	mux.HandleFunc("POST /redrive/dry-run", s.redriveDryRun)
	mux.HandleFunc("POST /redrive/move", s.redriveMove)
	mux.HandleFunc("POST /movetask/start", s.moveTaskStart)
	mux.HandleFunc("POST /movetask/cancel", s.moveTaskCancel)
	mux.HandleFunc("GET /idempotency", s.idempotencyPage)
	mux.HandleFunc("POST /idempotency/release", s.idempotencyRelease)
	mux.HandleFunc("GET /jobs", s.jobsPage)
	mux.HandleFunc("GET /outbox", s.outboxPage)
	mux.HandleFunc("POST /outbox/retry", s.outboxRetry)
	mux.HandleFunc("POST /outbox/skip", s.outboxSkip)
	return s.guard.Protect(mux)
}

// page is what every template gets.
type page struct {
	Title    string
	CSRF     string
	Interval int64 // milliseconds
	Snapshot Snapshot
	Table    string
	Outbox   string // the outbox's name, "" without one
	Jobs     bool   // job records can be looked up
	Data     any
	Error    string
}

func (s *Server) render(w http.ResponseWriter, status int, name, title string, data any) {
	s.renderError(w, status, name, title, data, "")
}

func (s *Server) renderError(w http.ResponseWriter, status int, name, title string, data any, problem string) {
	p := page{Title: title, CSRF: s.csrf, Interval: s.refresher.Interval().Milliseconds(), Snapshot: s.refresher.Snapshot(), Table: s.config.Table, Jobs: s.config.Jobs != nil, Data: data, Error: problem}
	if s.config.Outbox != nil {
		p.Outbox = s.config.Outbox.Name()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := s.pages[name].ExecuteTemplate(w, "layout", p); err != nil {
		s.logger.Error("ui: rendering", "page", name, "err", err)
	}
}

// fail renders the error page.
func (s *Server) fail(w http.ResponseWriter, status int, err error) {
	s.renderError(w, status, "error.html", http.StatusText(status), nil, err.Error())
}

// queueOf returns the configured queue named by the "queue" parameter.
func (s *Server) queueOf(r *http.Request) (QueueSnapshot, error) {
	name := r.FormValue("queue")
	queue, ok := s.refresher.Snapshot().Queue(name)
	if !ok {
		return QueueSnapshot{}, fmt.Errorf("no configured queue is named %q (start the page with --queue %s)", name, name)
	}
	return queue, nil
}

// dlqOf returns the queue named by the "queue" parameter and its dead-letter queue.
func (s *Server) dlqOf(r *http.Request) (QueueSnapshot, *DLQSnapshot, error) {
	queue, err := s.queueOf(r)
	if err != nil {
		return queue, nil, err
	}
	if queue.DLQ == nil || queue.DLQ.URL == "" {
		if queue.Error != "" {
			return queue, nil, errors.New(queue.Error)
		}
		return queue, nil, fmt.Errorf("queue %s has no dead-letter queue (no redrive policy)", queue.Name)
	}
	return queue, queue.DLQ, nil
}
