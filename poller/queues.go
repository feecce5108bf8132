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

	// Limit bounds this queue's handler calls: Limit.MaxConcurrency slots of
	// Config.Concurrency at most, and Limit.RatePerSecond starts per second. Both act
	// before the receive: a queue at its concurrency limit, or with no token free, is
	// not polled, so no message waits received (its visibility timeout running) for its
	// turn. A receive asks for at most as many messages as tokens are free (at most
	// Limit.RateBurst).
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
	return errors.Join(problems...)
}
