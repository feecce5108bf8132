package poller

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/hostsettings"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// validate reports every problem of a defaulted Config that can be seen without the
// queue, joined into one error; each names its field.
func (c Config) validate(client API) error {
	var problems []error
	add := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf("poller: "+format, args...))
	}
	if c.QueueURL == "" && len(c.Queues) == 0 {
		add("Config.QueueURL is empty (set it, or Config.Queues)")
	}
	if err := hostsettings.Concurrency(c.Concurrency); err != nil {
		problems = append(problems, hostsettings.Prefixed("poller: Config.", err))
	}
	if c.MaxMessages < 1 || c.MaxMessages > sqsinfo.MaxBatchEntries {
		add("Config.MaxMessages %d is outside 1..%d (SQS MaxNumberOfMessages)", c.MaxMessages, sqsinfo.MaxBatchEntries)
	}
	switch {
	case c.Receivers < 1 || c.Receivers > maxReceivers:
		add("Config.Receivers %d is outside 1..%d", c.Receivers, maxReceivers)
	case c.Concurrency >= 1 && c.Receivers > c.Concurrency:
		add("Config.Receivers %d exceeds Config.Concurrency %d: a receiver would wait for a free slot it never gets", c.Receivers, c.Concurrency)
	}
	if c.Prefetch < 0 || c.Prefetch > maxPrefetch {
		add("Config.Prefetch %d is outside 0..%d (one ReceiveMessage batch)", c.Prefetch, maxPrefetch)
	}
	if c.ReceiveGather < 0 || c.ReceiveGather > maxReceiveGather {
		add("Config.ReceiveGather %s is outside 0..%s", c.ReceiveGather, maxReceiveGather)
	}
	switch {
	case c.WaitTime < time.Second:
		add("Config.WaitTime %s is below 1s; short polling is not supported", c.WaitTime)
	case c.WaitTime > sqsinfo.MaxWaitTime:
		add("Config.WaitTime %s exceeds SQS's maximum WaitTimeSeconds of 20s", c.WaitTime)
	case c.WaitTime%time.Second != 0:
		add("Config.WaitTime %s is not a whole number of seconds (SQS WaitTimeSeconds)", c.WaitTime)
	}
	switch {
	case c.HandlerTimeout < 0:
		add("Config.HandlerTimeout %s is negative", c.HandlerTimeout)
	case c.HandlerTimeout >= maxHandlerTimeout:
		add("Config.HandlerTimeout %s cannot be covered by heartbeats: SQS keeps a message hidden at most 12h from its receive (limit %s)", c.HandlerTimeout, maxHandlerTimeout)
	}
	if c.MaxAbandonedHandlers < 0 {
		add("Config.MaxAbandonedHandlers %d is negative", c.MaxAbandonedHandlers)
	}
	switch {
	case c.ReceiveVisibility < 0:
		add("Config.ReceiveVisibility %s is negative", c.ReceiveVisibility)
	case c.ReceiveVisibility > sqsinfo.MaxVisibilityTimeout:
		add("Config.ReceiveVisibility %s exceeds SQS's 12h visibility limit", c.ReceiveVisibility)
	case c.ReceiveVisibility%time.Second != 0:
		add("Config.ReceiveVisibility %s is not a whole number of seconds (SQS VisibilityTimeout)", c.ReceiveVisibility)
	}
	if c.HeartbeatInterval < 0 {
		add("Config.HeartbeatInterval %s is negative", c.HeartbeatInterval)
	}
	switch {
	case c.VisibilityExtension < 0:
		add("Config.VisibilityExtension %s is negative", c.VisibilityExtension)
	case c.VisibilityExtension > sqsinfo.MaxVisibilityTimeout:
		add("Config.VisibilityExtension %s exceeds SQS's 12h visibility limit", c.VisibilityExtension)
	}
	if c.HeartbeatInterval > 0 && c.VisibilityExtension > 0 && c.HeartbeatInterval >= c.VisibilityExtension {
		add("Config.HeartbeatInterval %s must be shorter than Config.VisibilityExtension %s, or messages reappear between heartbeats", c.HeartbeatInterval, c.VisibilityExtension)
	}
	if c.MetricsHandler != nil && c.HealthCheckAddress == "" {
		add("Config.MetricsHandler is set without Config.HealthCheckAddress, the address it is served on")
	}
	if c.DrainTimeout < 0 {
		add("Config.DrainTimeout %s is negative", c.DrainTimeout)
	}
	switch {
	case c.StopTimeout < 0:
		add("Config.StopTimeout %s is negative", c.StopTimeout)
	case c.StopTimeout > 0 && c.StopTimeout <= stopTimeoutMargin:
		add("Config.StopTimeout %s leaves no time to drain: after its drain deadline a shutdown needs %s (%s for cancelled handlers, up to %s for the final delete flush, 1s of slack); raise the platform's stop timeout",
			c.StopTimeout, stopTimeoutMargin, cancelGrace, finalFlushTimeout)
	}
	if c.DeleteFlushInterval < 0 || c.DeleteFlushInterval > maxDeleteFlushInterval {
		add("Config.DeleteFlushInterval %s is outside 0..%s", c.DeleteFlushInterval, maxDeleteFlushInterval)
	}
	if backoff := hostsettings.Backoff(c.Backoff); len(backoff) > 0 {
		problems = append(problems, hostsettings.Prefixed("poller: Config.", backoff...))
	}
	if c.HTTPClientTimeout < 0 {
		add("Config.HTTPClientTimeout %s is negative", c.HTTPClientTimeout)
	}
	if c.WaitTime >= time.Second && c.WaitTime <= sqsinfo.MaxWaitTime {
		minimum := c.WaitTime + httpTimeoutSlack
		timeouts := httpClientTimeouts(client)
		if c.HTTPClientTimeout > 0 {
			timeouts = append(timeouts, namedTimeout{"Config.HTTPClientTimeout", c.HTTPClientTimeout})
		}
		for _, timeout := range timeouts {
			if timeout.value < minimum {
				add("%s %s must be at least Config.WaitTime %s + %s, or long polls on an idle queue time out", timeout.name, timeout.value, c.WaitTime, httpTimeoutSlack)
			}
		}
	}
	return errors.Join(problems...)
}

// withQueue fills the settings that default from the queue and reports the problems
// that depend on it.
func (c Config) withQueue(queue *sqsinfo.Queue) (Config, error) {
	var problems []error
	if queue.RedrivePolicy == nil && !c.AllowUnboundedRetries {
		problems = append(problems, fmt.Errorf("poller: queue %s has no redrive policy, so a message that always fails would be retried forever; add a dead-letter queue or set Config.AllowUnboundedRetries", queue.URL))
	}
	if policy := queue.RedrivePolicy; policy != nil && policy.MaxReceiveCount < MinMaxReceiveCount && !c.AllowLowMaxReceiveCount {
		problems = append(problems, fmt.Errorf("poller: queue %s has maxReceiveCount %d (redrive policy), below %d: every receive counts (a peek, a lost ReceiveMessage response, a crash), so messages would reach the dead-letter queue unhandled or after one failure; raise it to %d or more, or set Config.AllowLowMaxReceiveCount", queue.URL, policy.MaxReceiveCount, MinMaxReceiveCount, RecommendedMaxReceiveCount))
	}
	if c.ReceiveVisibility == 0 {
		c.ReceiveVisibility = min(queue.VisibilityTimeout, maxDefaultReceiveVisibility)
	}
	if c.VisibilityExtension == 0 {
		c.VisibilityExtension = max(queue.VisibilityTimeout, minDefaultVisibilityExtension)
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = c.VisibilityExtension / defaultHeartbeatDivisor
	} else if c.HeartbeatInterval >= c.VisibilityExtension {
		problems = append(problems, fmt.Errorf("poller: Config.HeartbeatInterval %s must be shorter than the visibility extension %s (Config.VisibilityExtension, defaulted from the queue's VisibilityTimeout)", c.HeartbeatInterval, c.VisibilityExtension))
	}
	return c, errors.Join(problems...)
}

// attemptLimits is a handler that declares per-type attempt limits, as
// [sqsworker.ServeMux] does with [sqsworker.JobMaxAttempts].
type attemptLimits interface {
	MaxAttempts() map[string]int
}

// checkAttempts reports the job types of handler whose attempt limit is not below the
// queue's maxReceiveCount: SQS would move their messages to the dead-letter queue first,
// without a reason, and no receive would be left for an interrupted attempt. A handler
// that does not declare limits (a mux wrapped in middleware, say) is not checked.
func checkAttempts(handler sqsworker.Handler, queue *sqsinfo.Queue) error {
	declared, ok := handler.(attemptLimits)
	if !ok || queue.RedrivePolicy == nil {
		return nil
	}
	limits := declared.MaxAttempts()
	var problems []error
	for _, jobType := range slices.Sorted(maps.Keys(limits)) {
		if limit, mrc := limits[jobType], queue.RedrivePolicy.MaxReceiveCount; limit >= mrc {
			problems = append(problems, fmt.Errorf("poller: job type %q has MaxAttempts %d, not below queue %s's maxReceiveCount %d (redrive policy): SQS would move its messages to the dead-letter queue first, without a reason; lower JobMaxAttempts or raise maxReceiveCount above it (the difference is what interrupted attempts may use)", jobType, limit, queue.URL, mrc))
		}
	}
	return errors.Join(problems...)
}

// namedTimeout is one HTTP timeout found on the client, with the name of its setting.
type namedTimeout struct {
	name  string
	value time.Duration
}

// httpClientTimeouts returns the non-zero response timeouts of client's HTTP client, when
// client exposes its options (as *sqs.Client does) and the HTTP client is a type the
// SDK or net/http defines.
func httpClientTimeouts(client API) []namedTimeout {
	withOptions, ok := client.(interface{ Options() sqs.Options })
	if !ok {
		return nil
	}
	var timeouts []namedTimeout
	add := func(name string, value time.Duration) {
		if value > 0 {
			timeouts = append(timeouts, namedTimeout{name, value})
		}
	}
	switch httpClient := withOptions.Options().HTTPClient.(type) {
	case *awshttp.BuildableClient:
		add("HTTP client timeout (BuildableClient.WithTimeout)", httpClient.GetTimeout())
		if readTimeout, set := httpClient.GetReadTimeout(); set {
			add("HTTP client read timeout (BuildableClient.WithReadTimeout)", readTimeout)
		}
		add("HTTP transport ResponseHeaderTimeout", httpClient.GetTransport().ResponseHeaderTimeout)
	case *http.Client:
		add("http.Client.Timeout", httpClient.Timeout)
		if transport, ok := httpClient.Transport.(*http.Transport); ok {
			add("HTTP transport ResponseHeaderTimeout", transport.ResponseHeaderTimeout)
		}
	}
	return timeouts
}
