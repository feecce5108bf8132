package provision

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// Resources is what [Apply] provisions: queues (each with its dead-letter queue and
// redrive policy) and DynamoDB tables. It is also the format of a resources file
// ([LoadFile]), as JSON: this repository's localstack/resources.json, for one, names the
// queues and tables of the demo and the local emulator tests.
type Resources struct {
	Queues []Queue `json:"queues"`
	Tables []Table `json:"tables"`
}

// Queue is one source queue and, optionally, its dead-letter queue. Zero numbers leave
// the attribute at the SQS default.
type Queue struct {
	// Name is the queue name; FIFO queue names end in ".fifo".
	Name string `json:"name"`
	// FIFO creates a FIFO queue (and a FIFO dead-letter queue).
	FIFO bool `json:"fifo"`
	// VisibilityTimeoutSeconds is the VisibilityTimeout attribute (0 to 43200).
	VisibilityTimeoutSeconds int `json:"visibility_timeout_seconds"`
	// MessageRetentionSeconds is the MessageRetentionPeriod attribute (60 to 1209600).
	MessageRetentionSeconds int `json:"message_retention_seconds"`
	// ReceiveWaitTimeSeconds is the ReceiveMessageWaitTimeSeconds attribute (0 to 20).
	ReceiveWaitTimeSeconds int `json:"receive_wait_time_seconds"`
	// MaximumMessageSize is the MaximumMessageSize attribute in bytes (1024 to 1048576).
	// The dead-letter queue gets the same, so every message the source accepts fits there.
	MaximumMessageSize int `json:"maximum_message_size"`
	// MaxReceiveCount is the redrive policy's maxReceiveCount; required with a dead-letter queue.
	MaxReceiveCount int `json:"max_receive_count"`
	// DeadLetterQueue, if set, is created first and named in the source's RedrivePolicy.
	DeadLetterQueue *DeadLetterQueue `json:"dead_letter_queue,omitempty"`
}

// DeadLetterQueue is a source queue's dead-letter queue.
type DeadLetterQueue struct {
	// Name is the dead-letter queue's name; it ends in ".fifo" exactly when the source's does.
	Name string `json:"name"`
	// MessageRetentionSeconds is its MessageRetentionPeriod attribute (60 to 1209600);
	// zero leaves the SQS default (4 days).
	MessageRetentionSeconds int `json:"message_retention_seconds"`
}

// Table is one DynamoDB table with a string partition key, billed on demand.
type Table struct {
	// Name is the table's name.
	Name string `json:"name"`
	// PartitionKey is the name of the string (S) hash key.
	PartitionKey string `json:"partition_key"`
	// TTLAttribute, if set, is the attribute DynamoDB's TTL reads (epoch seconds).
	TTLAttribute string `json:"ttl_attribute"`
}

// LoadFile reads and validates a resources file. Unknown fields are rejected, so a typo
// in an attribute name does not silently fall back to a default.
func LoadFile(path string) (*Resources, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	defer file.Close()
	var raw struct {
		Comment string `json:"_comment"`
		Resources
	}
	decoder := json.NewDecoder(file)
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&raw); err != nil {
		return nil, fmt.Errorf("provision: reading %s: %w", path, err)
	}
	if err := raw.Resources.Validate(); err != nil {
		return nil, fmt.Errorf("provision: %s: %w", path, err)
	}
	return &raw.Resources, nil
}

// Queue returns the queue named name, or nil.
func (r *Resources) Queue(name string) *Queue {
	for i := range r.Queues {
		if r.Queues[i].Name == name {
			return &r.Queues[i]
		}
	}
	return nil
}

// Validate reports every problem with the resources, joined with errors.Join.
func (r *Resources) Validate() error {
	var problems []error
	add := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }
	inRange := func(what string, value, low, high int) {
		if value != 0 && (value < low || value > high) {
			add("%s is %d, outside %d..%d", what, value, low, high)
		}
	}
	names := map[string]bool{}
	unique := func(name string) {
		if names[name] {
			add("name %q is used twice", name)
		}
		names[name] = true
	}
	for i, queue := range r.Queues {
		what := fmt.Sprintf("queues[%d] (%s)", i, queue.Name)
		if queue.Name == "" {
			add("queues[%d]: name is empty", i)
		}
		unique(queue.Name)
		if queue.FIFO != strings.HasSuffix(queue.Name, ".fifo") {
			add("%s: a queue name ends in .fifo exactly when fifo is true", what)
		}
		inRange(what+": visibility_timeout_seconds", queue.VisibilityTimeoutSeconds, 0, int(sqsinfo.MaxVisibilityTimeout/time.Second))
		inRange(what+": message_retention_seconds", queue.MessageRetentionSeconds, int(sqsinfo.MinRetention/time.Second), int(sqsinfo.MaxRetention/time.Second))
		inRange(what+": receive_wait_time_seconds", queue.ReceiveWaitTimeSeconds, 0, int(sqsinfo.MaxWaitTime/time.Second))
		inRange(what+": maximum_message_size", queue.MaximumMessageSize, sqsinfo.MinMaximumMessageSize, sqsinfo.MaxMessageBytes)
		if dlq := queue.DeadLetterQueue; dlq != nil {
			unique(dlq.Name)
			if dlq.Name == "" {
				add("%s: dead_letter_queue.name is empty", what)
			}
			if queue.FIFO != strings.HasSuffix(dlq.Name, ".fifo") {
				add("%s: the dead-letter queue of a FIFO queue is a FIFO queue and the other way round", what)
			}
			if queue.MaxReceiveCount < 1 || queue.MaxReceiveCount > 1000 {
				add("%s: max_receive_count is %d, outside 1..1000", what, queue.MaxReceiveCount)
			}
			inRange(what+": dead_letter_queue.message_retention_seconds", dlq.MessageRetentionSeconds, int(sqsinfo.MinRetention/time.Second), int(sqsinfo.MaxRetention/time.Second))
		} else if queue.MaxReceiveCount != 0 {
			add("%s: max_receive_count is set but there is no dead_letter_queue", what)
		}
	}
	for i, table := range r.Tables {
		if table.Name == "" {
			add("tables[%d]: name is empty", i)
		}
		if table.PartitionKey == "" {
			add("tables[%d] (%s): partition_key is empty", i, table.Name)
		}
	}
	return errors.Join(problems...)
}
