package otelsqsworker

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Label values and bounds. Whoever may send to a queue chooses a message's attributes,
// so no label value is taken from a message unchecked: each distinct value is a series
// kept for the life of the process in every backend, and one /metrics answer lists them
// all.
const (
	// JobTypeUnregistered is the job type label of a message whose job type is not one
	// of MetricsConfig.Registered's (the mux's handlers): the job-type attribute is the
	// sender's choice, so only the program's own types get series of their own.
	JobTypeUnregistered = "unregistered"
	// LabelOther is the queue label past MaxQueues queue names (and of a name SQS would
	// not accept), and the reason label past 1000 attribute sets.
	LabelOther = "other"
	// MaxQueues bounds the queue names labelled by name. A poller serves one queue; a
	// Lambda function the few its event source mappings read.
	MaxQueues = 64
	// MaxReasonLength bounds a reason label, in bytes: a longer reason is cut (at a
	// character boundary). Reasons are the program's (PermanentError, DeferError), but
	// some name what a message pointed at (an HTTP status, say).
	MaxReasonLength = 64
	// maxQueueNameLength is SQS's limit on a queue name, ".fifo" included
	// (CreateQueue's QueueName).
	maxQueueNameLength = 80
	// maxQueueURLs bounds the URLs cached for the lock-free lookup; others are resolved
	// under the lock each time.
	maxQueueURLs = 4 * MaxQueues
	// maxJobTypes bounds the registered job types cached for the lock-free lookup, in
	// case Registered accepts more than a mux's handful.
	maxJobTypes = 1000
)

// jobTypes bounds job type labels, of metrics and of spans alike: a type is labelled by
// name only when Registered accepts it.
type jobTypes struct {
	isRegistered func(string) bool
	registered   atomic.Pointer[map[string]struct{}] // accepted types; replaced, never changed
	mu           sync.Mutex                          // guards the replacement of registered
}

func newJobTypes(isRegistered func(string) bool) *jobTypes {
	j := &jobTypes{isRegistered: isRegistered}
	j.registered.Store(&map[string]struct{}{})
	return j
}

// label returns the job type label of a message's job type: the type itself when it is
// registered, JobTypeUnregistered otherwise, "" for a message without one. Registered
// types are remembered (a mux only ever adds types), so the common case is one atomic
// load and a map lookup.
func (j *jobTypes) label(jobType string) string {
	if jobType == "" {
		return ""
	}
	if _, ok := (*j.registered.Load())[jobType]; ok {
		return jobType
	}
	if j.isRegistered == nil || !j.isRegistered(jobType) {
		return JobTypeUnregistered
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	registered := *j.registered.Load()
	if len(registered) >= maxJobTypes {
		return JobTypeUnregistered
	}
	if _, ok := registered[jobType]; !ok {
		j.registered.Store(withEntry(registered, jobType, struct{}{}))
	}
	return jobType
}

// reasonLabel returns reason cut to MaxReasonLength bytes of valid UTF-8.
func reasonLabel(reason string) string {
	if len(reason) <= MaxReasonLength && utf8.ValidString(reason) {
		return reason
	}
	reason = strings.ToValidUTF8(reason, "")
	if len(reason) <= MaxReasonLength {
		return reason
	}
	cut := MaxReasonLength
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut]
}

// queueLabel returns name when SQS would accept it as a queue name (1 to 80
// alphanumerics, hyphens and underscores, ".fifo" included), LabelOther otherwise.
func queueLabel(name string) string {
	base := strings.TrimSuffix(name, ".fifo")
	if base == "" || len(name) > maxQueueNameLength {
		return LabelOther
	}
	for _, c := range []byte(base) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return LabelOther
		}
	}
	return name
}
