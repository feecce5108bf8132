package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/producer"
)

// API is the part of the SQS client the scheduler uses; *sqs.Client satisfies it.
type API interface {
	producer.API
	GetQueueUrl(ctx context.Context, input *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Defaults for [Config].
const (
	// DefaultLeaseName is the lease's name when Config.LeaseName is empty.
	DefaultLeaseName = "scheduler"
	// DefaultLeaseDuration is how long a lease lasts without renewal.
	DefaultLeaseDuration = 15 * time.Second
	// DefaultMissedAfter is the grace period: how late a tick may be and still count as
	// on time (at least LeaseDuration + RenewInterval).
	DefaultMissedAfter = time.Minute
	// retryInterval is the pause after a failed DynamoDB or SQS call.
	retryInterval = time.Second
)

// Config configures a [Scheduler].
type Config struct {
	// Table is the DynamoDB table (string partition key "id", for example the
	// idempotency table) holding the lease and each schedule's state (its last tick).
	// Required.
	Table string
	// LeaseName names the lease: replicas with the same name and table elect one
	// leader. If empty, DefaultLeaseName.
	LeaseName string
	// Owner identifies this replica in the lease; if empty, hostname-pid-random.
	Owner string
	// LeaseDuration is how long the lease lasts without renewal, from 1 s; if zero,
	// DefaultLeaseDuration (15 s). A standby takes over at most this long after the
	// leader died (plus the wait for the next tick). It also bounds each DynamoDB call.
	LeaseDuration time.Duration
	// RenewInterval is how often the leader renews the lease, and how often a standby
	// looks at it at most; if zero, LeaseDuration/3. It must be less than half of
	// LeaseDuration, so one failed renewal is retried before the lease lapses.
	RenewInterval time.Duration
	// MissedAfter is the grace period: how late a tick may be enqueued and still be on
	// time, whatever its schedule's CatchUp. A tick later than this is missed, and so is
	// a tick that fell due while no replica led unless it is the last one due before the
	// next leader took over; the schedule's CatchUp decides what becomes of missed ticks.
	// It must be at least LeaseDuration + RenewInterval, the longest a takeover after a
	// leader's crash takes, so a crash loses no tick. If zero, DefaultMissedAfter (1 min)
	// or LeaseDuration + RenewInterval when that is longer.
	MissedAfter time.Duration
	// Observer, if not nil, is told about leadership and ticks.
	Observer Observer
	// Logger receives the scheduler's logs; if nil, slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.LeaseName == "" {
		c.LeaseName = DefaultLeaseName
	}
	if c.Owner == "" {
		host, _ := os.Hostname()
		random := make([]byte, 3)
		_, _ = rand.Read(random)
		c.Owner = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(random))
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = c.LeaseDuration / 3
	}
	if c.MissedAfter == 0 {
		c.MissedAfter = max(DefaultMissedAfter, c.LeaseDuration+c.RenewInterval)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Table == "" {
		errs = append(errs, errors.New("scheduler: Config.Table is empty"))
	}
	if c.LeaseDuration < time.Second {
		errs = append(errs, fmt.Errorf("scheduler: Config.LeaseDuration %s is below 1s", c.LeaseDuration))
	}
	if c.RenewInterval <= 0 || 2*c.RenewInterval >= c.LeaseDuration {
		errs = append(errs, fmt.Errorf("scheduler: Config.RenewInterval %s must be positive and less than half of LeaseDuration %s", c.RenewInterval, c.LeaseDuration))
	}
	if c.MissedAfter < c.LeaseDuration+c.RenewInterval {
		errs = append(errs, fmt.Errorf("scheduler: Config.MissedAfter %s is below LeaseDuration + RenewInterval (%s): a tick due while a crashed leader's lease lapses would be missed",
			c.MissedAfter, c.LeaseDuration+c.RenewInterval))
	}
	return errors.Join(errs...)
}

// Scheduler runs schedules as one replica of a group that elects a leader. Create it with
// [New]; run it with [Scheduler.Run], or [Scheduler.Start] and [Scheduler.Shutdown]
// (beside a poller.Server in one process: Start the scheduler, Run the server, then
// Shutdown the scheduler).
type Scheduler struct {
	sqs       API
	config    Config
	store     *store
	producer  *producer.Producer
	schedules []compiled
	observer  Observer
	logger    *slog.Logger

	lead *leadership

	mu      sync.Mutex
	started bool
	stop    chan struct{} // closed by Shutdown
	done    chan struct{} // closed when both goroutines have returned
}

// compiled is a schedule with its timetable and resolved queue URL, and the ticker's
// backoff after failed passes (only the ticker goroutine touches those).
type compiled struct {
	Schedule
	table    timetable
	offset   time.Duration // the jitter offset
	queueURL string

	failures int       // failed passes in a row
	moved    int       // passes in a row that found the state changed under the cache
	retryAt  time.Time // no pass before this
}

// New returns a scheduler for schedules. It checks config and the schedules (see
// [Validate]) and reports every problem in one error.
func New(sqsClient API, dynamo DynamoDBAPI, config Config, schedules []Schedule) (*Scheduler, error) {
	config = config.withDefaults()
	var errs []error
	if sqsClient == nil {
		errs = append(errs, errors.New("scheduler: the SQS client is nil"))
	}
	if dynamo == nil {
		errs = append(errs, errors.New("scheduler: the DynamoDB client is nil"))
	}
	if len(schedules) == 0 {
		errs = append(errs, errors.New("scheduler: no schedules"))
	}
	errs = append(errs, config.validate(), Validate(schedules))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	jobs, err := producer.New(sqsClient, producer.Config{})
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	s := &Scheduler{
		sqs:      sqsClient,
		config:   config,
		store:    &store{client: dynamo, table: config.Table, lease: config.LeaseName, timeout: config.LeaseDuration},
		producer: jobs,
		observer: config.Observer,
		logger:   config.Logger.With("scheduler", config.LeaseName, "owner", config.Owner),
		lead:     newLeadership(),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	for _, schedule := range schedules {
		table, _ := schedule.compile() // checked by Validate
		offset := schedule.offset(config.Table + "/" + config.LeaseName)
		s.schedules = append(s.schedules, compiled{Schedule: schedule, table: table, offset: offset})
	}
	return s, nil
}

// Start resolves queue names to URLs (GetQueueUrl) and starts the replica's two
// goroutines: the lease keeper (takes, renews and releases the lease) and the ticker
// (claims and sends due ticks while the replica leads). ctx bounds the start-up calls
// only; stop the scheduler with Shutdown.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped() {
		return errors.New("scheduler: closed (Shutdown was called)")
	}
	if s.started {
		return errors.New("scheduler: already started")
	}
	for i := range s.schedules {
		url, err := s.queueURL(ctx, s.schedules[i].Queue)
		if err != nil {
			return err
		}
		s.schedules[i].queueURL = url
		if _, err := s.schedules[i].message(s.schedules[i].Name, time.Now()); err != nil {
			return fmt.Errorf("scheduler: schedule %q: %w", s.schedules[i].Name, err)
		}
	}
	s.started = true
	base := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	tickerDone := make(chan struct{})
	go func() { // the ticker: ends when stop is closed
		defer wg.Done()
		defer close(tickerDone)
		s.runTicker(base)
	}()
	go func() { // the lease keeper: ends after the ticker, releasing the lease
		defer wg.Done()
		s.runKeeper(base, tickerDone)
	}()
	go func() { wg.Wait(); close(s.done) }()
	s.logger.Info("scheduler: started", "schedules", len(s.schedules), "lease_duration", s.config.LeaseDuration)
	return nil
}

func (s *Scheduler) queueURL(ctx context.Context, queue string) (string, error) {
	if strings.HasPrefix(queue, "https://") || strings.HasPrefix(queue, "http://") {
		return queue, nil
	}
	out, err := s.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
	if err != nil {
		return "", fmt.Errorf("scheduler: resolving queue %q: %w", queue, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// Shutdown stops the replica: the ticker finishes the tick in progress and stops, then
// the keeper releases the lease (so a standby takes over at once instead of after
// LeaseDuration) and stops. It returns nil, or ctx's error if ctx ended first (the
// goroutines still stop). Shutdown before Start just closes the scheduler.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	started := s.started
	s.started = true // a closed scheduler cannot be started
	s.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run starts the scheduler, waits until ctx is done or the process gets SIGTERM or
// SIGINT, and shuts down (see [Scheduler.Shutdown]). It returns nil after a graceful
// stop, and Start's error when it could not start.
func (s *Scheduler) Run(ctx context.Context) error {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(signals)
	if err := s.Start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case received := <-signals:
		s.logger.Info("scheduler: signal received; shutting down", "signal", received.String())
	}
	return s.Shutdown(context.WithoutCancel(ctx))
}

// Owner returns the replica's id in the lease (Config.Owner or its default).
func (s *Scheduler) Owner() string { return s.config.Owner }

// emit tells the observer.
func (s *Scheduler) emit(ctx context.Context, ev Event) {
	ev.Owner = s.config.Owner
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	if s.observer != nil {
		s.observer.ObserveScheduler(ctx, ev)
	}
}

// wait blocks for d, or until stop is closed or changed fires; false when stopped.
func (s *Scheduler) wait(d time.Duration, changed <-chan struct{}) bool {
	timer := time.NewTimer(max(d, 0))
	defer timer.Stop()
	select {
	case <-s.stop:
		return false
	case <-changed:
	case <-timer.C:
	}
	return true
}

// stopped reports whether Shutdown was called.
func (s *Scheduler) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}
