package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// serverState is where a Server is in its life: new → active → stopping → closed.
type serverState int

const (
	stateNew serverState = iota
	stateActive
	stateStopping
	stateClosed
)

// Server is the long-poll container worker for one queue or several (Config.Queues,
// sharing one Concurrency pool): it receives messages, runs the queue's handler on each
// under a hard timeout with a visibility heartbeat, and settles each message from the
// handler's error (see [sqsworker.Classify]). Create it with [New]; run it with
// [Server.Run], or [Server.Start] and [Server.Shutdown].
type Server struct {
	api     API
	config  Config
	handler sqsworker.Handler
	logger  *slog.Logger
	stats   counters
	// signals registers for the shutdown signals (shutdownSignals; tests replace it).
	signals func() (<-chan os.Signal, func())
	// drainWarning, if not empty, is logged at Start: DrainTimeout was lowered to fit
	// StopTimeout.
	drainWarning string

	mu         sync.Mutex
	state      serverState
	queues     []*queueRuntime
	dispatcher *dispatcher
	health     *healthServer
	wg         sync.WaitGroup
	closed     chan struct{}
}

// queueRuntime is one queue's components in a started server.
type queueRuntime struct {
	config   Config // the server's Config as it applies to this queue (Config.forQueue)
	spec     QueueConfig
	info     *sqsinfo.Queue
	logger   *slog.Logger
	lane     *lane
	receiver *receiver
	extender *extender
	acker    *acker
}

// New returns a Server that will consume config.QueueURL with handler, or each queue of
// config.Queues with its own handler (handler for those without). It fills in the
// defaults and reports every problem of the configuration that can be seen without
// the queues, each naming its field, in one error (errors.Join): wait time, message
// count, concurrency, receivers, timeouts, backoff, weights, limits, and the HTTP
// client's timeouts against the long-poll wait (see [Config.HTTPClientTimeout]).
// Problems that depend on a queue are reported by Start.
func New(client API, config Config, handler sqsworker.Handler) (*Server, error) {
	drainWarning := config.drainLowered()
	config = config.withDefaults()
	var problems []error
	if client == nil {
		problems = append(problems, errors.New("poller: the SQS client is nil"))
	}
	problems = append(problems, config.validateQueues(handler != nil))
	if err := errors.Join(append(problems, config.validate(client))...); err != nil {
		return nil, err
	}
	logger := config.Logger
	if len(config.Queues) == 0 {
		logger = logger.With("queue", config.QueueURL)
	}
	return &Server{
		api:          client,
		config:       config,
		handler:      handler,
		logger:       logger,
		signals:      shutdownSignals,
		drainWarning: drainWarning,
		closed:       make(chan struct{}),
	}, nil
}

// Start reads each queue's attributes, checks the settings that depend on them, and
// starts receiving. It fails, receiving nothing, when a queue has no redrive policy
// and Config.AllowUnboundedRetries is false, when its maxReceiveCount is below
// [MinMaxReceiveCount] and Config.AllowLowMaxReceiveCount is false, when the heartbeat
// interval is not shorter than the visibility extension defaulted from the queue, or
// when the health endpoint cannot listen; the problems of every queue are joined. ctx
// bounds these start-up calls; handler contexts keep its values but not its
// cancellation: stop the server with Shutdown.
//
// Errors: "poller: server already started" (or closed), and the problems above.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateActive:
		return errors.New("poller: server already started")
	case stateStopping, stateClosed:
		return errors.New("poller: server is closed")
	}
	var queues []*queueRuntime
	var problems []error
	for _, spec := range s.config.queueConfigs() {
		info, err := sqsinfo.LoadQueue(ctx, s.api, spec.URL)
		if err != nil {
			problems = append(problems, fmt.Errorf("poller: %w", err))
			continue
		}
		config, err := s.config.forQueue(spec).withQueue(info)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		handler := spec.Handler
		if handler == nil {
			handler = s.handler
		}
		if err := checkAttempts(handler, info); err != nil {
			problems = append(problems, err)
			continue
		}
		logger := s.config.Logger.With("queue", spec.URL)
		if policy := info.RedrivePolicy; policy != nil && policy.MaxReceiveCount < RecommendedMaxReceiveCount {
			logger.Warn("poller: low maxReceiveCount: every receive counts toward it (a peek, a lost ReceiveMessage response, a crash), not only handler attempts, so a message may reach the dead-letter queue unhandled",
				"max_receive_count", policy.MaxReceiveCount, "recommended_min", RecommendedMaxReceiveCount)
		}
		queues = append(queues, &queueRuntime{config: config, spec: spec, info: info, logger: logger})
	}
	if err := errors.Join(problems...); err != nil {
		return err
	}
	if s.drainWarning != "" {
		s.logger.Warn(s.drainWarning, "drain_timeout", s.config.DrainTimeout, "stop_timeout", s.config.StopTimeout)
	}
	base := context.WithoutCancel(ctx)
	if s.config.HealthCheckAddress != "" {
		var err error
		s.health, err = newHealthServer(healthServerParams{
			address: s.config.HealthCheckAddress,
			status:  s.healthStatus,
			metrics: s.config.MetricsHandler,
			logger:  s.logger,
		})
		if err != nil {
			return err
		}
	}
	s.wire(queues, base)
	s.state = stateActive
	for _, q := range s.queues {
		q.extender.start(&s.wg)
		q.acker.start(&s.wg)
	}
	if s.health != nil {
		s.health.start(&s.wg)
	}
	for _, q := range s.queues {
		q.receiver.start(&s.wg)
	}
	for _, q := range s.queues {
		q.logger.Info("poller: started",
			"fifo", q.info.FIFO,
			"dead_letter_queue", q.info.DeadLetterQueueURL,
			"concurrency", s.config.Concurrency,
			"queues", len(s.queues),
			"priority", s.config.Priority.String(),
			"weight", q.spec.Weight,
			"min_slots", q.lane.slots.reserve,
			"max_slots", q.lane.slots.limit,
			"max_wait", q.spec.MaxWait,
			"rate_per_second", q.spec.Limit.RatePerSecond,
			"receivers", q.config.Receivers,
			"wait_time", q.config.WaitTime,
			"handler_timeout", q.config.HandlerTimeout,
			"receive_visibility", q.config.ReceiveVisibility,
			"heartbeat_interval", q.config.HeartbeatInterval,
			"visibility_extension", q.config.VisibilityExtension,
			"drain_timeout", q.config.DrainTimeout,
			"stop_timeout", q.config.StopTimeout)
	}
	return nil
}

// wire builds the components: the slot pool (one share per queue) and the dispatcher,
// shared; per queue, the settlement (internal/settle, observed by the server's counters
// and Config.Observer), extender, acker, settler, lane and receivers.
func (s *Server) wire(queues []*queueRuntime, base context.Context) {
	specs := make([]poolSpec, len(queues))
	for i, q := range queues {
		specs[i] = poolSpec{weight: q.spec.Weight, maxSlots: q.spec.MaxSlots, minSlots: q.spec.MinSlots, maxWait: q.spec.MaxWait}
	}
	concurrency := newPool(s.config.Concurrency+s.config.Prefetch, s.config.Priority == Strict, specs...)
	concurrency.gather = s.config.ReceiveGather
	concurrency.prefetch = s.config.Prefetch
	concurrency.aging = func(index int, maxWait, waited time.Duration) {
		queues[index].logger.Info(fmt.Sprintf("poller: priority: aging %s after %s", path.Base(queues[index].info.URL), maxWait), "max_wait", maxWait, "waited", waited)
	}
	jobTypes := make(map[string]*limiter, len(s.config.JobTypeLimits))
	for jobType, limit := range s.config.JobTypeLimits {
		jobTypes[jobType] = newLimiter(limit)
	}
	s.dispatcher = newDispatcher(dispatcherParams{
		handlerTimeout: s.config.HandlerTimeout,
		concurrency:    s.config.Concurrency,
		pool:           concurrency,
		logger:         s.logger,
		baseContext:    base,
		maxAbandoned:   s.config.MaxAbandonedHandlers,
		stats:          &s.stats,
	})
	for i, q := range queues {
		s.wireQueue(q, concurrency, concurrency.queues[i], jobTypes, base)
	}
	s.queues = queues
}

// wireQueue builds q's components, its lane taking share of the pool.
func (s *Server) wireQueue(q *queueRuntime, pool *pool, share *poolQueue, jobTypes map[string]*limiter, base context.Context) {
	config, queue := q.config, q.info
	core := settle.New(settle.Config{
		Host:                  "poller",
		Backoff:               config.Backoff,
		DeadLetter:            settle.QueueDeadLetter{API: s.api, Load: func(context.Context, string) (*sqsinfo.Queue, error) { return queue, nil }},
		DisableDeadLetterSend: config.DisableDeadLetterSend,
		ErrorHandler:          config.ErrorHandler,
		Observer:              sqsworker.Observers(&s.stats.events, &s.stats.tenants, config.Observer),
		Logger:                q.logger,
		CallTimeout:           visibilityCallTimeout,
	})
	q.extender = newExtender(extenderParams{
		api:         s.api,
		queue:       queue,
		interval:    config.HeartbeatInterval,
		extension:   config.VisibilityExtension,
		initial:     config.ReceiveVisibility,
		logger:      q.logger,
		settle:      core,
		callContext: base,
	})
	q.acker = newAcker(ackerParams{
		api:         s.api,
		queueURL:    queue.URL,
		interval:    config.DeleteFlushInterval,
		maxInFlight: deletesInFlight(config.Concurrency),
		logger:      q.logger,
		settle:      core,
		callContext: base,
	})
	settler := newSettler(settlerParams{
		api:         s.api,
		queueURL:    queue.URL,
		settle:      core,
		extender:    q.extender,
		acker:       q.acker,
		logger:      q.logger,
		callContext: base,
	})
	handler := q.spec.Handler
	if handler == nil {
		handler = s.handler
	}
	q.lane = &lane{
		queueURL: queue.URL,
		fifo:     queue.FIFO,
		handler:  handler,
		settler:  settler,
		slots:    share,
		rate:     newLimiter(Limit{RatePerSecond: q.spec.Limit.RatePerSecond, RateBurst: q.spec.Limit.RateBurst}),
		jobTypes: jobTypes,
	}
	q.receiver = newReceiver(receiverParams{
		api:         s.api,
		queue:       queue,
		lane:        q.lane,
		maxMessages: config.MaxMessages,
		receivers:   config.Receivers,
		waitTime:    config.WaitTime,
		visibility:  config.ReceiveVisibility,
		pool:        pool,
		extender:    q.extender,
		dispatcher:  s.dispatcher,
		logger:      q.logger,
		stats:       &s.stats,
		baseContext: base,
	})
}

// HealthCheckAddress returns the address the health endpoint (and Config.MetricsHandler)
// listens on, with the port chosen when Config.HealthCheckAddress asked for port 0; ""
// before Start or without a health endpoint.
func (s *Server) HealthCheckAddress() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.health == nil {
		return ""
	}
	return s.health.address()
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Stats {
	stats := s.stats.snapshot()
	s.mu.Lock()
	queues, dispatcher := s.queues, s.dispatcher
	s.mu.Unlock()
	if dispatcher != nil {
		urls := make([]string, len(queues))
		for i, q := range queues {
			urls[i] = q.info.URL
		}
		stats.Slots = dispatcher.pool.slots(urls)
	}
	return stats
}

// healthStatus is the health endpoint's answer: healthy while the server is active and
// can receive, else the reason.
func (s *Server) healthStatus() (healthy bool, reason string) {
	if !s.running() {
		return false, "stopping"
	}
	if starved, holding := s.dispatcher.starved(); starved {
		return false, fmt.Sprintf("cannot receive: abandoned handlers (ignoring their cancelled context) hold all %d concurrency slots", holding)
	}
	return true, "ok"
}

// running reports whether the server is active.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateActive
}
