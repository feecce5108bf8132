package poller

import (
	"errors"
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/hostsettings"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// Priority is how a server with several queues (Config.Queues) shares its Concurrency
// slots and its receives among them, the two orders asynq and Shoryuken offer.
type Priority int

const (
	// Weighted gives each queue, while several have messages, QueueConfig.Weight /
	// (sum of the weights of those queues) of the messages received; a queue with
	// messages is never starved, and a queue without any lends its share to the others.
	// The shares are of messages, counted per receive (stride scheduling), so they are
	// also the shares of the slots when the queues' handlers take alike. The default.
	Weighted Priority = iota
	// Strict receives from a queue only while every queue of higher Weight came back
	// empty from its last receive: messages of a lower queue wait while a higher one
	// has any. Queues of equal weight share without an order. At start every queue
	// counts as having messages, so a lower queue waits for the higher ones' first
	// empty receive (at most Config.WaitTime).
	Strict
)

// String returns "weighted" or "strict".
func (p Priority) String() string {
	switch p {
	case Weighted:
		return "weighted"
	case Strict:
		return "strict"
	}
	return fmt.Sprintf("Priority(%d)", int(p))
}

// QueueConfig is one queue of a server that consumes several (Config.Queues). Its zero
// fields take the server's: the handler given to [New], and Config's visibility,
// heartbeat and backoff settings. Each queue is checked at Start like Config.QueueURL
// (redrive policy, maxReceiveCount) and has its own heartbeats, deletes and dead-letter
// queue; all share Config.Concurrency, Receivers (per queue), MaxMessages, WaitTime and
// HandlerTimeout.
type QueueConfig struct {
	// URL specifies the queue. Required; each queue at most once.
	URL string

	// Handler handles this queue's messages (a [sqsworker.ServeMux] routes them by job
	// type); if nil, the handler given to New, which must then not be nil.
	Handler sqsworker.Handler

	// Weight specifies the queue's share under Config.Priority Weighted (for example 6,
	// 3 and 1 for critical, default and low: 60%, 30% and 10% of the messages while all
	// three have messages), and its rank under Strict (higher first); if zero, defaults
	// to 1. Negative values are rejected.
	Weight int

	// MinSlots specifies how many of Config.Concurrency's slots are reserved for this
	// queue: no other queue takes them, so this queue's messages start at once (within
	// one receive's round trip) however long the other queues' handlers run, and under
	// Strict priority too. Weights only pick which queue a freed slot serves; they
	// cannot free one, so without a reservation long jobs of a low queue that hold
	// every slot keep a high queue's messages waiting for as long as those jobs run.
	// The reservation is of slots, not messages: while this queue has no messages its
	// reserved slots stay idle (its idle long poll holds one of them). If zero, nothing
	// is reserved. New refuses a negative value, a value above MaxSlots, a sum over all
	// queues above Config.Concurrency, and Config.Prefetch with it (a prefetched message
	// waits for a handler turn behind other queues' messages, so a reserved slot would
	// hold a message that cannot start).
	MinSlots int

	// MaxSlots specifies the most slots of Config.Concurrency this queue holds at once
	// (its receives in flight and its messages, prefetched ones included); if zero, no
	// bound beyond Concurrency. It acts before the receive: a queue at its MaxSlots is
	// not polled, so no message waits received (its visibility timeout running) for a
	// slot. Use it to keep slots for the other queues when this queue's jobs are long.
	// Negative values are rejected.
	MaxSlots int

	// MaxWait specifies, under Strict priority, how long this queue's receive yields to
	// queues of higher Weight that have messages before it ages: it then takes the next
	// freed slot (or batch of free slots) before them, once, and yields again. So a job
	// of this queue that is visible starts within MaxWait plus the longest running job
	// of the server, even while a higher queue stays non-empty, instead of never. Each
	// aging is logged ("poller: priority: aging <queue> after <MaxWait>"). If zero, the
	// queue waits as long as a higher queue has messages. It requires Strict (under
	// Weighted no queue with messages is starved); negative values are rejected.
	MaxWait time.Duration

	// Limit bounds this queue's handler starts per second (Limit.RatePerSecond, with
	// Limit.RateBurst). It acts before the receive: a queue with no token free is not
	// polled, so no message waits received (its visibility timeout running) for its
	// turn. A receive asks for at most as many messages as tokens are free (at most
	// Limit.RateBurst). A queue's concurrency bound is MaxSlots: Limit.MaxConcurrency is
	// for Config.JobTypeLimits and refused here.
	Limit Limit

	// ReceiveVisibility, HeartbeatInterval and VisibilityExtension specify this queue's
	// visibility settings (see the Config fields of the same names, defaulted from this
	// queue's VisibilityTimeout); if zero, Config's.
	ReceiveVisibility   time.Duration
	HeartbeatInterval   time.Duration
	VisibilityExtension time.Duration

	// Backoff specifies the retry delay of this queue's failed messages; if every field
	// is zero, Config.Backoff.
	Backoff sqsworker.Backoff
}

// queueConfigs returns the queues c configures: Config.Queues, or one queue for
// Config.QueueURL. Defaults are applied to each.
func (c Config) queueConfigs() []QueueConfig {
	queues := c.Queues
	if len(queues) == 0 {
		queues = []QueueConfig{{URL: c.QueueURL}}
	}
	out := make([]QueueConfig, len(queues))
	for i, q := range queues {
		if q.Weight == 0 {
			q.Weight = 1
		}
		out[i] = q
	}
	return out
}

// forQueue returns c as it applies to queue q: the URL and the settings q overrides.
func (c Config) forQueue(q QueueConfig) Config {
	c.QueueURL = q.URL
	if q.ReceiveVisibility != 0 {
		c.ReceiveVisibility = q.ReceiveVisibility
	}
	if q.HeartbeatInterval != 0 {
		c.HeartbeatInterval = q.HeartbeatInterval
	}
	if q.VisibilityExtension != 0 {
		c.VisibilityExtension = q.VisibilityExtension
	}
	if b := q.Backoff; b.Base != 0 || b.Cap != 0 || b.Jitter != 0 || b.Random != nil {
		c.Backoff = q.Backoff
	}
	return c
}

// validateQueues reports the problems of Config.Queues, Config.Priority and
// Config.JobTypeLimits; handlerSet tells whether New got a handler.
func (c Config) validateQueues(handlerSet bool) error {
	var problems []error
	add := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf("poller: "+format, args...))
	}
	if c.Priority != Weighted && c.Priority != Strict {
		add("Config.Priority %d is neither Weighted nor Strict", int(c.Priority))
	}
	for jobType, limit := range c.JobTypeLimits {
		problems = append(problems, limit.validate(fmt.Sprintf("Config.JobTypeLimits[%q]", jobType))...)
	}
	if c.Prefetch > 0 && len(c.JobTypeLimits) > 0 {
		add("Config.Prefetch %d cannot be combined with Config.JobTypeLimits: a message over its job type's limit waits holding a Concurrency slot, and prefetched messages would wait beyond Concurrency; set Prefetch to 0", c.Prefetch)
	}
	if len(c.Queues) == 0 {
		if !handlerSet {
			add("the handler is nil")
		}
		return errors.Join(problems...)
	}
	if c.QueueURL != "" {
		add("Config.QueueURL and Config.Queues are both set; list %s in Config.Queues instead", c.QueueURL)
	}
	seen := make(map[string]int, len(c.Queues))
	for i, q := range c.Queues {
		name := fmt.Sprintf("Config.Queues[%d]", i)
		if q.URL == "" {
			add("%s.URL is empty", name)
		} else if first, dup := seen[q.URL]; dup {
			add("%s.URL %s repeats Config.Queues[%d]", name, q.URL, first)
		} else {
			seen[q.URL] = i
		}
		if q.Handler == nil && !handlerSet {
			add("%s.Handler is nil and New was given no handler", name)
		}
		if q.Weight < 0 {
			add("%s.Weight %d is negative", name, q.Weight)
		}
		problems = append(problems, q.Limit.validate(name+".Limit")...)
		if q.Limit.MaxConcurrency != 0 {
			add("%s.Limit.MaxConcurrency %d: a queue's slot bound is %s.MaxSlots", name, q.Limit.MaxConcurrency, name)
		}
		problems = append(problems, c.validateSlots(name, q)...)
		if c.Prefetch > 0 && q.Limit.RatePerSecond > 0 {
			add("Config.Prefetch %d cannot be combined with %s.Limit.RatePerSecond: a rate-limited queue is polled only for the tokens free, so no message waits received for its rate; set Prefetch to 0", c.Prefetch, name)
		}
		switch {
		case q.ReceiveVisibility < 0 || q.ReceiveVisibility > sqsinfo.MaxVisibilityTimeout || q.ReceiveVisibility%time.Second != 0:
			add("%s.ReceiveVisibility %s is not whole seconds from 0 to 12h (SQS VisibilityTimeout)", name, q.ReceiveVisibility)
		case q.VisibilityExtension < 0 || q.VisibilityExtension > sqsinfo.MaxVisibilityTimeout:
			add("%s.VisibilityExtension %s is outside 0..12h (SQS's visibility limit)", name, q.VisibilityExtension)
		case q.HeartbeatInterval < 0:
			add("%s.HeartbeatInterval %s is negative", name, q.HeartbeatInterval)
		}
		if backoff := hostsettings.Backoff(q.Backoff); len(backoff) > 0 {
			problems = append(problems, hostsettings.Prefixed("poller: "+name+".", backoff...))
		}
	}
	if total := c.minSlotsTotal(); total > 0 {
		if c.Concurrency >= 1 && total > c.Concurrency {
			add("MinSlots total %d exceeds concurrency %d", total, c.Concurrency)
		}
		if c.Prefetch > 0 {
			add("Config.Prefetch %d cannot be combined with MinSlots: a prefetched message waits for a handler turn behind other queues' messages, so a reserved slot would hold a message that cannot start; set Prefetch to 0", c.Prefetch)
		}
	}
	return errors.Join(problems...)
}

// validateSlots reports the problems of queue q's MinSlots, MaxSlots and MaxWait,
// naming it as name.
func (c Config) validateSlots(name string, q QueueConfig) []error {
	var problems []error
	add := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf("poller: "+format, args...))
	}
	if q.MinSlots < 0 {
		add("%s.MinSlots %d is negative", name, q.MinSlots)
	}
	switch {
	case q.MaxSlots < 0:
		add("%s.MaxSlots %d is negative", name, q.MaxSlots)
	case q.MaxSlots > 0 && q.MinSlots > q.MaxSlots:
		add("%s.MinSlots %d exceeds its MaxSlots %d", name, q.MinSlots, q.MaxSlots)
	}
	switch {
	case q.MaxWait < 0:
		add("%s.MaxWait %s is negative", name, q.MaxWait)
	case q.MaxWait > 0 && c.Priority != Strict:
		add("%s.MaxWait %s requires Config.Priority Strict (under Weighted no queue with messages waits for another)", name, q.MaxWait)
	}
	return problems
}

// minSlotsTotal is the sum of the queues' MinSlots (negative ones, refused, excepted).
func (c Config) minSlotsTotal() int {
	total := 0
	for _, q := range c.Queues {
		total += max(q.MinSlots, 0)
	}
	return total
}
