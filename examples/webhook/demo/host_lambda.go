package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/testing/rie"
	"github.com/sqsworker/sqsworker/lambda/localesm"
)

// functionPackage is the worker's main package, built as the function's bootstrap.
const functionPackage = "github.com/sqsworker/sqsworker/examples/webhook"

// errCrashed ends the invocation in flight on a crashed execution environment.
var errCrashed = errors.New("demo: the execution environment crashed")

// lambdaHost runs the worker as a Lambda function: the same main package built as a
// provided.al2023 bootstrap (-tags lambda.norpc, by internal/testing/rie), in options.Functions
// Runtime Interface Emulators, one execution environment each, serving one invocation at
// a time. A local SQS event source mapping (lambda/localesm) feeds them, with
// options.BatchSize records per invocation, ReportBatchItemFailures, and a maximum
// concurrency of one invocation per environment. Each environment handles the records of
// an invocation all at once (SQSWORKER_CONCURRENCY = BatchSize); its idempotency lease
// ends with the invocation's deadline (options.FunctionTimeout, below the queue's
// visibility timeout).
//
// The crash kills the first environment, its RIE and its function process, while it has
// an invocation in flight: the mapping sees the invocation fail, deletes none of its
// records, and they come back after their visibility timeout. As Lambda would, the
// mapping's next invocation in that slot goes to a new environment (a cold start): the
// mapping's function URLs name slots, and its transport (router) sends each invocation
// to the slot's current environment. stop stops the mapping, then the environments.
//
// Records of the killed invocation the function had already settled come back too: the
// mapping deletes a batch's records only when the invocation returns. A completed
// delivery is then suppressed as a duplicate; a dead-lettered record is sent to the
// dead-letter queue again.
type lambdaHost struct {
	options   options
	bootstrap string
	env       []string
	logDir    string
	printf    func(format string, args ...any)

	slots        []*slot
	environments []*environment // every environment started, in order

	mapping     *localesm.Mapping
	mappingLog  *os.File
	stopMapping context.CancelFunc
	mappingDone chan struct{}
}

func (h *lambdaHost) unit() string { return "execution environment" }

func (h *lambdaHost) build(ctx context.Context, root, logDir string) error {
	s := newScope("build", func(string, ...any) {})
	defer s.close()
	return s.do(func() {
		h.bootstrap = rie.BuildBootstrap(s, functionPackage)
		rie.Binary(s) // the emulator too, before anything touches SQS
	})
}

func (h *lambdaHost) start(ctx context.Context, s setup) error {
	o := s.options
	h.options, h.logDir, h.printf = o, s.logDir, s.printf
	// The RIE passes its whole environment (AWS_* endpoints and credentials included) to
	// the function; SQSWORKER_* settings from the shell are blanked.
	for _, name := range inheritedSettings() {
		h.env = append(h.env, name+"=")
	}
	h.env = append(h.env, workerSettings(o, s.table)...)
	h.env = append(h.env, "SQSWORKER_CONCURRENCY="+strconv.Itoa(o.BatchSize))

	router := &router{transport: &http.Transport{}, slots: map[string]*slot{}}
	var urls []string
	for i := range o.Functions {
		environment, err := h.startEnvironment()
		if err != nil {
			return err
		}
		address := fmt.Sprintf("environment-%d.invalid", i+1)
		slot := &slot{changed: make(chan struct{})}
		slot.put(environment)
		h.slots = append(h.slots, slot)
		router.slots[address] = slot
		urls = append(urls, "http://"+address+rie.InvokePath)
	}

	var err error
	if h.mappingLog, err = os.Create(filepath.Join(s.logDir, "mapping.log")); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	mappingCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.mapping, err = localesm.New(mappingCtx, s.sqs, localesm.Config{
		QueueURL:                s.queueURL,
		FunctionURLs:            urls,
		BatchSize:               o.BatchSize,
		MaximumConcurrency:      o.Functions,
		ReportBatchItemFailures: true,
		HTTPClient:              &http.Client{Transport: router},
		Logger:                  slog.New(slog.NewJSONHandler(h.mappingLog, nil)),
	})
	if err != nil {
		cancel()
		return err
	}
	h.stopMapping, h.mappingDone = cancel, make(chan struct{})
	go func() {
		defer close(h.mappingDone)
		_ = h.mapping.Run(mappingCtx)
	}()
	s.printf("started %d execution environments (Runtime Interface Emulator, function timeout %s, %d records at once) behind an event source mapping (batch size %d, maximum concurrency %d, ReportBatchItemFailures); logs in %s",
		o.Functions, o.FunctionTimeout, o.BatchSize, o.BatchSize, o.Functions, s.logDir)
	return nil
}

// startEnvironment starts one RIE running the bootstrap; the function itself starts on
// its first invocation.
func (h *lambdaHost) startEnvironment() (*environment, error) {
	e := &environment{number: len(h.environments) + 1}
	e.logPath = filepath.Join(h.logDir, fmt.Sprintf("environment-%d.log", e.number))
	e.scope = newScope(fmt.Sprintf("execution environment %d", e.number), h.printf)
	err := e.scope.do(func() {
		e.fn = rie.Start(e.scope, rie.Options{Bootstrap: h.bootstrap, Env: h.env, Timeout: h.options.FunctionTimeout, Name: "webhook"})
	})
	if err != nil {
		e.scope.close()
		return nil, err
	}
	if e.url, err = url.Parse(e.fn.URL); err != nil {
		e.scope.close()
		return nil, err
	}
	e.alive, e.kill = context.WithCancelCause(context.Background())
	h.environments = append(h.environments, e)
	return e, nil
}

// check reports a mapping that stopped. The RIEs are not watched: an environment that
// died on its own shows as failed invocations, and its records come back.
func (h *lambdaHost) check() error {
	select {
	case <-h.mappingDone:
		return errors.New("demo: the event source mapping stopped early")
	default:
		return nil
	}
}

func (h *lambdaHost) crash(ctx context.Context) (crash, error) {
	slot := h.slots[0]
	victim := slot.current()
	// A crash mid-invocation: wait a little for one. The receiver is paused, so nothing
	// is delivered meanwhile.
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_ = poll(waitCtx, 10*time.Millisecond, func() (bool, error) { return len(victim.invocation()) > 0, nil })
	cancel()
	slot.take()
	inFlight := victim.invocation()
	// The invocation fails before the function dies, so no answer of a dying RIE can be
	// taken for the function's response.
	victim.kill(errCrashed)
	victim.stop()
	replacement, err := h.startEnvironment()
	if err != nil {
		return crash{}, err
	}
	slot.put(replacement)
	work := "no invocation"
	if len(inFlight) > 0 {
		work = fmt.Sprintf("an invocation of %d records", len(inFlight))
	}
	return crash{
		description: fmt.Sprintf("killed execution environment %d (RIE and function; environment %d takes its place) with %s in flight",
			victim.number, replacement.number, work),
		messageIDs: inFlight,
	}, nil
}

func (h *lambdaHost) stop() error {
	h.stopMapping()
	<-h.mappingDone
	stats := h.mapping.Stats()
	var coldStarts []string
	for _, e := range h.environments {
		e.stop()
		if duration, ok := e.fn.InitDuration(); ok {
			coldStarts = append(coldStarts, fmt.Sprintf("%d: %s", e.number, duration.Round(time.Millisecond)))
		}
	}
	h.printf("stopped the event source mapping (%d invocations, %d failed as a whole, %d records deleted, %d left for a retry) and the execution environments; cold starts (RIE INIT REPORT) %s",
		stats.Invocations, stats.FailedBatches, stats.Deleted, stats.Retried, strings.Join(coldStarts, ", "))
	return nil
}

func (h *lambdaHost) logPaths() []string {
	paths := make([]string, len(h.environments))
	for i, e := range h.environments {
		paths[i] = e.logPath
	}
	return paths
}

func (h *lambdaHost) close() {
	if h.stopMapping != nil {
		h.stopMapping()
		<-h.mappingDone
	}
	for _, e := range h.environments {
		e.stop()
	}
	if h.mappingLog != nil {
		h.mappingLog.Close()
	}
	// In a test, rie.Main removes the builds; `go run` has no such hook.
	if dir := filepath.Dir(filepath.Dir(h.bootstrap)); h.bootstrap != "" && !testing.Testing() && strings.HasPrefix(filepath.Base(dir), "sqsworker-rie-") {
		_ = os.RemoveAll(dir)
	}
}

// environment is one execution environment: an RIE and the function it runs.
type environment struct {
	number  int // in start order, from 1
	scope   *scope
	fn      *rie.Function
	url     *url.URL
	logPath string
	// alive ends when the environment crashes; its invocation in flight fails then.
	alive context.Context
	kill  context.CancelCauseFunc

	mu       sync.Mutex
	inFlight []string // message ids of the invocation in flight
	stopped  bool
}

// invocation returns the message ids of the invocation in flight, if any.
func (e *environment) invocation() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.inFlight
}

// stop stops the RIE (which ends the function) and writes its output to the log, once.
func (e *environment) stop() {
	e.mu.Lock()
	stopped := e.stopped
	e.stopped = true
	e.mu.Unlock()
	if stopped {
		return
	}
	e.kill(errors.New("demo: the execution environment stopped"))
	e.scope.close()
	_ = os.WriteFile(e.logPath, []byte(e.fn.Output()), 0o644)
}

// invoke forwards the mapping's invocation to the environment's RIE. It fails when the
// environment crashes before the response is read.
func (e *environment) invoke(transport http.RoundTripper, request *http.Request) (*http.Response, error) {
	ids := eventMessageIDs(request)
	ctx, cancel := context.WithCancelCause(request.Context())
	stopWatching := context.AfterFunc(e.alive, func() { cancel(context.Cause(e.alive)) })
	e.mu.Lock()
	e.inFlight = ids
	e.mu.Unlock()
	done := sync.OnceFunc(func() {
		stopWatching()
		cancel(nil)
		e.mu.Lock()
		e.inFlight = nil
		e.mu.Unlock()
	})
	forwarded := request.Clone(ctx)
	target := *e.url
	forwarded.URL, forwarded.Host = &target, ""
	response, err := transport.RoundTrip(forwarded)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		done()
		return nil, err
	}
	response.Body = &closeHook{ReadCloser: response.Body, done: done}
	return response, nil
}

// eventMessageIDs returns the message ids of the SQS event a request carries.
func eventMessageIDs(request *http.Request) []string {
	if request.GetBody == nil {
		return nil
	}
	body, err := request.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	var event struct {
		Records []struct {
			MessageID string `json:"messageId"`
		}
	}
	if json.NewDecoder(body).Decode(&event) != nil {
		return nil
	}
	ids := make([]string, len(event.Records))
	for i, record := range event.Records {
		ids[i] = record.MessageID
	}
	return ids
}

type closeHook struct {
	io.ReadCloser
	done func()
}

func (c *closeHook) Close() error {
	err := c.ReadCloser.Close()
	c.done()
	return err
}

// slot is one of the mapping's function URLs: the execution environment behind it can
// change, as Lambda replaces a crashed environment.
type slot struct {
	mu          sync.Mutex
	environment *environment
	changed     chan struct{} // closed when an environment is put in
}

func (s *slot) current() *environment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.environment
}

// take empties the slot: invocations wait for the next environment.
func (s *slot) take() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.environment = nil
}

func (s *slot) put(e *environment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.environment = e
	close(s.changed)
	s.changed = make(chan struct{})
}

// wait returns the slot's environment, waiting for one while the slot is empty.
func (s *slot) wait(ctx context.Context) (*environment, error) {
	for {
		s.mu.Lock()
		environment, changed := s.environment, s.changed
		s.mu.Unlock()
		if environment != nil {
			return environment, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// router is the mapping's transport: it sends each invocation to the environment
// currently behind its slot's URL.
type router struct {
	transport http.RoundTripper
	slots     map[string]*slot // by URL host
}

func (r *router) RoundTrip(request *http.Request) (*http.Response, error) {
	slot := r.slots[request.URL.Host]
	if slot == nil {
		return nil, fmt.Errorf("demo: no execution environment behind %s", request.URL)
	}
	environment, err := slot.wait(request.Context())
	if err != nil {
		return nil, err
	}
	return environment.invoke(r.transport, request)
}
