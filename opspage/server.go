package opspage

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
	"github.com/sqsworker/sqsworker/redrive"
)

//go:embed templates/*.html static/*
var files embed.FS

// Defaults and limits of [Config].
const (
	DefaultInterval = 5 * time.Second
	DefaultPeekMax  = 100
	// DefaultHistory is how far back the queue charts go when Config.History is zero.
	DefaultHistory = time.Hour
	// MaxHistory is the longest Config.History accepted: the history is kept in memory.
	MaxHistory = 24 * time.Hour
	// maxKept bounds the dry runs kept for confirmation.
	maxKept = 100
	// planLifetime is how long a dry run can be confirmed.
	planLifetime = 30 * time.Minute
)

// API is the part of the SQS client the page uses: the redrive package's mover, peek
// and move tasks, and the queue attributes it polls. *sqs.Client satisfies it.
type API interface {
	redrive.MoverAPI
	redrive.MoveTaskAPI
	PollAPI
}

// Config describes an operations page. What the page reads and changes is decided here,
// never by a request: a request names one of Queues (by name), and the idempotency
// table and the outbox are the ones given; any other name answers 404.
type Config struct {
	// Addr is the address browsers use to reach the page, host:port with the actual port
	// (the Host header of every request must name it; a loopback host also accepts
	// 127.0.0.1, localhost and [::1] with that port; on port 443 with Secure, or 80
	// without, the host alone too, as browsers send it). Required.
	Addr string
	// Prefix is the path the page is mounted under in a larger server, such as "/ops"
	// (a trailing slash is dropped): every link, form, asset and redirect of the page
	// starts with it. The page accepts its requests with the prefix
	// (mux.Handle("/ops/", page)) or without it (mux.Handle("/ops/",
	// http.StripPrefix("/ops", page))). Empty for a page served at the root. It is
	// segments of letters, digits and ._~- and its first segment is none of the page's
	// own (static, api, queue, dlq, redrive, movetask, idempotency, outbox).
	Prefix string
	// Queues are the URLs of the queues to show, in order; their dead-letter queues are
	// found from their redrive policies. At least one.
	Queues []string
	// Counters, when set, is where throughput and failure rate come from (the CLI's
	// --metrics reads the workers' Prometheus counters); otherwise they are derived from
	// the change of the SQS counts.
	Counters Counters
	// Ages, when set, is where the oldest message's age comes from (the CLI's
	// --cloudwatch: CloudWatch); otherwise the chart shows an upper bound from the polls.
	Ages Ages
	// Interval is the refresh interval (at least [MinInterval]); if zero,
	// [DefaultInterval].
	Interval time.Duration
	// History is how far back the queue charts go, at most [MaxHistory]; if zero,
	// [DefaultHistory]. The page keeps at most [HistoryPoints] polls per queue in memory
	// (see the package documentation, "Charts").
	History time.Duration
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
	// Outbox is the transactional outbox whose backlog, failed entries and parked FIFO
	// groups the page shows, with Retry and Skip actions; nil to hide that part.
	Outbox Outbox
	// Jobs is the store of the job records the page shows by job id (GET /jobs?id=ID, a
	// *jobs.Store); nil to hide that part. With Jobs set and JobLink nil, a dead letter
	// with a job-id attribute links to its record on this page.
	Jobs JobRecords
	// Batches is where the page reads the batches it shows by batch id (GET
	// /batches?id=ID, a *batches.Batches): counts and callbacks; nil to hide that part.
	Batches BatchStatuses
	// JobLink, when set, links each dead letter of the dead-letter view and of its message
	// page to where its job is looked up (a job history, a tracing or logging UI): it
	// returns the address for a letter of the queue named queue, or "" for no link; it
	// takes the place of the page's own job view as the link's target. html/template
	// refuses an unsafe address (javascript: and the like become "#ZgotmplZ").
	JobLink func(queue string, letter redrive.DeadLetter) string
	// AccessToken is required on every request (see the package documentation,
	// "Security"), at least [MinAccessTokenLength] bytes; if empty, New makes a random
	// one ([Page.AccessToken]).
	AccessToken string
	// Secure says the page is served over TLS: the session cookie is then Secure.
	Secure bool
	// Logger receives the actions taken; if nil, logs are discarded.
	Logger *slog.Logger
}

// Page is the operations page, an http.Handler. Build it with [New], start its
// refresher with Start, serve it, and call Close at the end. Before Start the page knows
// no queue's state (a queue's pages answer 404); after Close it answers from its last
// poll.
type Page struct {
	config    Config
	api       API
	refresher *refresher
	guard     *guard
	routes    http.Handler
	csrf      string
	pages     map[string]*template.Template
	logger    *slog.Logger

	mu    sync.Mutex
	peeks map[string]*peek // by queue name: the last look at its dead-letter queue
	plans map[string]*plan // by id: dry runs waiting for confirmation
}

// New checks config and builds the page; it makes no AWS call. Errors: a bad Addr or
// Prefix, no queues, an interval below MinInterval, a history above MaxHistory, an
// access token shorter than MinAccessTokenLength, unparsable templates (a build defect).
func New(api API, config Config) (*Page, error) {
	if config.Interval == 0 {
		config.Interval = DefaultInterval
	}
	if config.History == 0 {
		config.History = DefaultHistory
	}
	if config.PeekMax <= 0 {
		config.PeekMax = DefaultPeekMax
	}
	prefix, err := cleanPrefix(config.Prefix)
	if err != nil {
		return nil, err
	}
	config.Prefix = prefix
	logger := config.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	refresher, err := newRefresher(api, config.Queues, config.Counters, config.Interval, config.History)
	if err != nil {
		return nil, err
	}
	refresher.ages = config.Ages
	if config.AccessToken == "" {
		config.AccessToken = newToken()
	}
	csrf := newToken()
	guard, err := newGuard(guardConfig{Addr: config.Addr, Prefix: prefix, CSRF: csrf, AccessToken: config.AccessToken, Secure: config.Secure})
	if err != nil {
		return nil, fmt.Errorf("opspage: address %q: %w", config.Addr, err)
	}
	if config.JobLink == nil && config.Jobs != nil {
		config.JobLink = recordLink(prefix)
	}
	pages, err := parsePages(config.JobLink)
	if err != nil {
		return nil, err
	}
	p := &Page{
		config: config, api: api, refresher: refresher, guard: guard, csrf: csrf, pages: pages, logger: logger,
		peeks: map[string]*peek{}, plans: map[string]*plan{},
	}
	p.routes = guard.protect(p.mux())
	return p, nil
}

// Start makes the refresher's first poll and returns when it has ended (so that the
// first page shows every queue), then polls every interval in a goroutine the page
// owns, until Close is called or ctx ends. Call it once.
func (s *Page) Start(ctx context.Context) { s.refresher.start(ctx) }

// Close stops the refresher and waits for its goroutine; the page still answers
// afterwards, from its last poll.
func (s *Page) Close() { s.refresher.stop() }

// AccessToken returns the token every request must carry (Config.AccessToken, or the
// random one New made): hand it to the browser once as PREFIX/?token=TOKEN.
func (s *Page) AccessToken() string { return s.config.AccessToken }

// ServeHTTP serves the page's routes behind its guard (see the package documentation,
// "Security"). A path that starts with Config.Prefix has it removed first.
func (s *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.routes.ServeHTTP(w, withoutPrefix(r, s.config.Prefix))
}

// mux returns the page's routes. State-changing routes accept POST only (net/http
// answers any other method with 405 Method Not Allowed).
func (s *Page) mux() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(files, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.queuesPage)
	mux.HandleFunc("GET /api/queues", s.queuesJSON)
	mux.HandleFunc("GET /queue", s.queuePage)
	mux.HandleFunc("GET /queue/charts", s.queueCharts)
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
	mux.HandleFunc("GET /batches", s.batchesPage)
	mux.HandleFunc("GET /outbox", s.outboxPage)
	mux.HandleFunc("POST /outbox/retry", s.outboxRetry)
	mux.HandleFunc("POST /outbox/skip", s.outboxSkip)
	return mux
}

// page is what every template gets.
type page struct {
	Title    string
	Base     string // Config.Prefix: every link starts with it
	CSRF     string
	Interval int64 // milliseconds
	Snapshot Snapshot
	Table    string
	Outbox   string // the outbox's name, "" without one
	Jobs     bool   // job records can be looked up
	Batches  bool   // batches can be looked up
	Data     any
	Error    string
}

func (s *Page) render(w http.ResponseWriter, status int, name, title string, data any) {
	s.renderError(w, status, name, title, data, "")
}

func (s *Page) renderError(w http.ResponseWriter, status int, name, title string, data any, problem string) {
	view := page{Title: title, Base: s.config.Prefix, CSRF: s.csrf, Interval: s.refresher.interval.Milliseconds(), Snapshot: s.refresher.snapshotNow(),
		Table: s.config.Table, Jobs: s.config.Jobs != nil, Batches: s.config.Batches != nil, Data: data, Error: problem}
	if s.config.Outbox != nil {
		view.Outbox = s.config.Outbox.Name()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := s.pages[name].ExecuteTemplate(w, "layout", view); err != nil {
		s.logger.Error("opspage: rendering", "page", name, "err", err)
	}
}

// fail renders the error page.
func (s *Page) fail(w http.ResponseWriter, status int, err error) {
	s.renderError(w, status, "error.html", http.StatusText(status), nil, err.Error())
}

// queueOf returns the configured queue named by the "queue" parameter.
func (s *Page) queueOf(r *http.Request) (QueueSnapshot, error) {
	name := r.FormValue("queue")
	queue, ok := s.refresher.snapshotNow().Queue(name)
	if !ok {
		return QueueSnapshot{}, fmt.Errorf("no queue named %q is configured on this page (the CLI: --queue %s)", name, name)
	}
	return queue, nil
}

// dlqOf returns the queue named by the "queue" parameter and its dead-letter queue.
func (s *Page) dlqOf(r *http.Request) (QueueSnapshot, *DLQSnapshot, error) {
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
