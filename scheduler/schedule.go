package scheduler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"strings"
	"time"
)

// Schedule is one periodic job: what to enqueue, where and when. Its JSON form is the
// definition format shared with the Terraform module eventbridge-schedules (see
// [Definitions]).
type Schedule struct {
	// Name identifies the schedule and its ticks: 1 to 64 characters of A-Z, a-z, 0-9,
	// '.', '_' and '-' (EventBridge Scheduler's rule for schedule names). Names must be
	// unique per DynamoDB table: a tick's id is its name and time.
	Name string `json:"name"`
	// Cron is the schedule expression, parsed by github.com/robfig/cron/v3: five fields
	// (minute hour day-of-month month day-of-week), or six with a leading seconds field;
	// "@every 2s" (a Go duration, at least 1 s; ticks fall on multiples of it since the
	// Unix epoch, so every replica computes the same ticks); or @yearly, @annually,
	// @monthly, @weekly, @daily, @midnight, @hourly. The Terraform module accepts the
	// five-field form with day-of-week names (MON-FRI), @every in whole minutes or hours,
	// and the descriptors.
	Cron string `json:"cron"`
	// TimeZone is the IANA time zone the expression is read in, for example
	// "Europe/Berlin"; if empty, UTC. Across daylight-saving changes a schedule with
	// listed hours (daily or coarser: "30 2 * * *", "0 9 * * MON-FRI", "0 */6 * * *")
	// ticks once per local slot: a slot inside a spring-forward gap at the first instant
	// after the gap ("30 2 * * *" in America/New_York on 8 March 2026 ticks at 03:00 EDT),
	// a slot that occurs twice at fall back at its first occurrence only, and a slot at
	// a midnight that does not exist at the day's first instant, never a year later. A
	// schedule that runs every hour or more often runs by elapsed time: both occurrences
	// of a repeated hour, none in a skipped one. @every ticks are independent of the zone.
	TimeZone string `json:"time_zone,omitempty"`
	// JobType is sent as the job-type message attribute (and, for EventBridge targets,
	// the "job_type" body field: see [JobTypeField]).
	JobType string `json:"job_type"`
	// Payload is the job's JSON body: an object, or absent for {}.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Queue is the queue's URL or name (a name is resolved with GetQueueUrl at Start).
	Queue string `json:"queue"`
	// GroupID is the message group id on FIFO queues; if empty, the schedule's name.
	GroupID string `json:"group_id,omitempty"`
	// CatchUp is the missed-tick policy: how many of the schedule's missed ticks are
	// still enqueued, the most recent ones; the older ones are skipped
	// ([EventTicksSkipped]). A tick is missed when it fell due more than
	// Config.MissedAfter ago without being enqueued, or while no replica led and it is
	// not the last tick due before the next leader took over (that one is enqueued
	// whatever the policy, when within MissedAfter). 0 (the default) skips them all; at
	// most 1000. A leader reports the missed ticks of a schedule in one log line with
	// the counts.
	CatchUp int `json:"catch_up,omitempty"`
	// RunOnStart enqueues one extra tick when a leader starts (a deploy, a restart, a
	// takeover) and the schedule's last enqueued tick is older than one interval (the
	// tick after it fell due and was skipped: missed beyond CatchUp), or none was ever
	// enqueued; never when a tick is enqueued in the same pass. Its id is
	// [StartTickID], so it is never taken for a regular tick; the regular ticks go on
	// after it. Container scheduler only (the Terraform module ignores it).
	RunOnStart bool `json:"run_on_start,omitempty"`
	// Jitter delays every tick of the schedule by a fixed offset in [0, Jitter), derived
	// from the scheduler's table, lease name and the schedule's name (the same on every
	// replica), so that schedules many services share ("0 0 * * *") do not all fire in
	// the same second. The tick's id keeps the scheduled time. A Go
	// duration ("90s", "5m"); the Terraform module maps it to a flexible time window of
	// whole minutes.
	Jitter Duration `json:"jitter,omitempty"`
}

// Duration is a [time.Duration] written in JSON as a Go duration string ("90s").
type Duration time.Duration

// MarshalJSON writes the duration as a string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(data []byte) error {
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\": %s", data)
	}
	parsed, err := time.ParseDuration(text)
	if err != nil {
		return err
	}
	*d = Duration(parsed)
	return nil
}

// Definitions is the schedule definition file: {"schedules": [...]}. The container
// scheduler reads it with [ReadSchedules]; the Terraform module takes the same text as
// its schedules_json input (schedules_json = file("schedules.json")).
type Definitions struct {
	Schedules []Schedule `json:"schedules"`
}

// JobTypeField is the body field that carries the job type where no message attribute
// can (an EventBridge Scheduler SQS target sets none): route those messages with
// sqsworker.NewServeMux(sqsworker.RouteByJSONField(scheduler.JobTypeField)).
const JobTypeField = "job_type"

// MaxCatchUp is the largest Schedule.CatchUp.
const MaxCatchUp = 1000

// ParseSchedules decodes a definition file's text strictly (unknown fields are errors)
// and checks every schedule; the error names each invalid schedule and field.
func ParseSchedules(data []byte) ([]Schedule, error) {
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	var definitions Definitions
	if err := decoder.Decode(&definitions); err != nil {
		return nil, fmt.Errorf("scheduler: schedule definitions: %w", err)
	}
	if decoder.More() {
		return nil, errors.New("scheduler: schedule definitions: text after the JSON object")
	}
	if err := Validate(definitions.Schedules); err != nil {
		return nil, err
	}
	return definitions.Schedules, nil
}

// ReadSchedules reads and checks a definition file (see [ParseSchedules]).
func ReadSchedules(path string) ([]Schedule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	return ParseSchedules(data)
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Validate checks schedules: names (valid and unique), expressions, time zones, job
// types, payloads (JSON objects), queues, CatchUp and Jitter. The error names every
// problem (errors.Join).
func Validate(schedules []Schedule) error {
	var errs []error
	seen := map[string]bool{}
	for i, s := range schedules {
		label := fmt.Sprintf("schedule %d (%q)", i, s.Name)
		if !namePattern.MatchString(s.Name) {
			errs = append(errs, fmt.Errorf("scheduler: %s: name must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', '-'", label))
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("scheduler: %s: name used twice (a tick's id is its schedule's name and time)", label))
		}
		seen[s.Name] = true
		if _, err := s.compile(); err != nil {
			errs = append(errs, fmt.Errorf("scheduler: %s: %w", label, err))
		}
		if s.JobType == "" {
			errs = append(errs, fmt.Errorf("scheduler: %s: job_type is empty", label))
		}
		if len(s.Payload) > 0 {
			var object map[string]json.RawMessage
			if err := json.Unmarshal(s.Payload, &object); err != nil || object == nil {
				errs = append(errs, fmt.Errorf("scheduler: %s: payload must be a JSON object", label))
			}
		}
		if s.Queue == "" {
			errs = append(errs, fmt.Errorf("scheduler: %s: queue is empty (a queue URL or name)", label))
		}
		if s.CatchUp < 0 || s.CatchUp > MaxCatchUp {
			errs = append(errs, fmt.Errorf("scheduler: %s: catch_up %d is outside 0 to %d", label, s.CatchUp, MaxCatchUp))
		}
		if s.Jitter < 0 {
			errs = append(errs, fmt.Errorf("scheduler: %s: jitter %s is negative", label, time.Duration(s.Jitter)))
		}
	}
	return errors.Join(errs...)
}

// NextRuns returns the schedule's next n ticks after t, in UTC (without jitter).
func (s Schedule) NextRuns(t time.Time, n int) ([]time.Time, error) {
	table, err := s.compile()
	if err != nil {
		return nil, err
	}
	runs := make([]time.Time, 0, n)
	for range n {
		t = table.next(t)
		if t.IsZero() {
			break
		}
		runs = append(runs, t)
	}
	return runs, nil
}

// offset is the schedule's jitter: a fixed offset in [0, Jitter) from seed (the
// scheduler's table and lease name) and the schedule's name, so that services sharing a
// schedule's name and expression still spread out.
func (s Schedule) offset(seed string) time.Duration {
	if s.Jitter <= 0 {
		return 0
	}
	hash := fnv.New64a()
	_, _ = hash.Write([]byte(seed + "/" + s.Name))
	return time.Duration(hash.Sum64() % uint64(s.Jitter))
}

// body is the message body: the payload, or {}.
func (s Schedule) body() string {
	if len(s.Payload) == 0 {
		return "{}"
	}
	return string(s.Payload)
}

// TickID is the stable id of the schedule's tick at t: the name, "/", and t in UTC as
// RFC 3339 ("nightly-report/2026-12-01T02:00:00Z"). It is the idempotency key of the
// tick's message (and its FIFO deduplication id), at most 85 characters.
func TickID(schedule string, t time.Time) string {
	return schedule + "/" + t.UTC().Format(time.RFC3339)
}

// StartTickID is the id of the tick a schedule with RunOnStart enqueues when a leader
// starts at t: the name, "/start-", and t in UTC as RFC 3339, to the second
// ("nightly-report/start-2026-12-01T09:12:07Z"), so it never equals a regular tick's id.
func StartTickID(schedule string, t time.Time) string {
	return schedule + "/start-" + t.UTC().Format(time.RFC3339)
}

// parseTickID reads a tick id of schedule written by TickID or StartTickID.
func parseTickID(schedule, id string) (at time.Time, start bool, err error) {
	rest, ok := strings.CutPrefix(id, schedule+"/")
	if !ok {
		return time.Time{}, false, fmt.Errorf("tick id %q is not one of schedule %q", id, schedule)
	}
	rest, start = strings.CutPrefix(rest, "start-")
	at, err = time.Parse(time.RFC3339, rest)
	if err != nil || at.Location() != time.UTC || at.Format(time.RFC3339) != rest {
		return time.Time{}, false, fmt.Errorf("tick id %q does not end in a UTC time (RFC 3339)", id)
	}
	return at, start, nil
}
