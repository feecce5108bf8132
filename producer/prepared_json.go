package producer

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// PreparedVersion is the version of the JSON form of [Prepared] that MarshalJSON writes
// (its "v" field). UnmarshalJSON reads this version and refuses any other with
// [ErrPreparedForm].
const PreparedVersion = 1

// ErrPreparedForm matches (with errors.Is) the error of [Prepared.UnmarshalJSON] for a
// form that is malformed, of an unknown version, or that fails the checks of [Prepare].
var ErrPreparedForm = errors.New("producer: not a valid prepared job")

// preparedForm is the JSON form of Prepared, version 1. Durations are Go duration
// strings ("1h30m"); attributes keep their data type and their string or binary value
// (binary values base64, as encoding/json writes []byte).
type preparedForm struct {
	Version         int                      `json:"v"`
	QueueURL        string                   `json:"queue"`
	Body            string                   `json:"body"`
	Attributes      map[string]attributeForm `json:"attributes,omitempty"`
	GroupID         string                   `json:"group,omitempty"`
	DeduplicationID string                   `json:"dedup,omitempty"`
	Delay           string                   `json:"delay,omitempty"`
	UniqueKey       string                   `json:"unique_key,omitempty"`
	UniqueFor       string                   `json:"unique_for,omitempty"`
	UniqueMode      string                   `json:"unique_mode,omitempty"`
}

type attributeForm struct {
	DataType string  `json:"t"`
	String   *string `json:"s,omitempty"`
	Binary   []byte  `json:"b,omitempty"`
}

// MarshalJSON writes m in the stable JSON form of version [PreparedVersion]. It fails
// only for a UniqueMode with no name.
func (m Prepared) MarshalJSON() ([]byte, error) {
	form := preparedForm{
		Version: PreparedVersion, QueueURL: m.QueueURL, Body: m.Body, GroupID: m.GroupID,
		DeduplicationID: m.DeduplicationID, Delay: durationText(m.Delay),
		UniqueKey: m.UniqueKey, UniqueFor: durationText(m.UniqueFor),
	}
	if m.UniqueMode != UniqueUntilWindowEnds {
		if _, known := parseUniqueMode(m.UniqueMode.String()); !known {
			return nil, fmt.Errorf("producer: unknown Job.UniqueMode %d", int(m.UniqueMode))
		}
		form.UniqueMode = m.UniqueMode.String()
	}
	if len(m.Attributes) > 0 {
		form.Attributes = make(map[string]attributeForm, len(m.Attributes))
		for name, value := range m.Attributes {
			form.Attributes[name] = attributeForm{DataType: aws.ToString(value.DataType), String: value.StringValue, Binary: value.BinaryValue}
		}
	}
	return json.Marshal(form)
}

// UnmarshalJSON reads the JSON form MarshalJSON writes and checks it as [Prepare] does.
// A malformed form, a version other than [PreparedVersion] or a form that fails the
// checks is an error matching [ErrPreparedForm].
func (m *Prepared) UnmarshalJSON(data []byte) error {
	var form preparedForm
	if err := json.Unmarshal(data, &form); err != nil {
		return fmt.Errorf("%w: %w", ErrPreparedForm, err)
	}
	if form.Version != PreparedVersion {
		return fmt.Errorf("%w: version %d, this producer reads version %d", ErrPreparedForm, form.Version, PreparedVersion)
	}
	decoded := Prepared{
		QueueURL: form.QueueURL, Body: form.Body, GroupID: form.GroupID,
		DeduplicationID: form.DeduplicationID, UniqueKey: form.UniqueKey,
	}
	var errs []error
	var err error
	if decoded.Delay, err = parseDurationText(form.Delay); err != nil {
		errs = append(errs, fmt.Errorf("delay: %w", err))
	}
	if decoded.UniqueFor, err = parseDurationText(form.UniqueFor); err != nil {
		errs = append(errs, fmt.Errorf("unique_for: %w", err))
	}
	if form.UniqueMode != "" {
		mode, known := parseUniqueMode(form.UniqueMode)
		if !known {
			errs = append(errs, fmt.Errorf("unknown unique_mode %q", form.UniqueMode))
		}
		decoded.UniqueMode = mode
	}
	if len(form.Attributes) > 0 {
		decoded.Attributes = make(map[string]types.MessageAttributeValue, len(form.Attributes))
		for name, value := range form.Attributes {
			if value.DataType == "" || (value.String == nil) == (value.Binary == nil) {
				errs = append(errs, fmt.Errorf("attribute %q needs a data type and one of a string and a binary value", name))
				continue
			}
			decoded.Attributes[name] = types.MessageAttributeValue{DataType: aws.String(value.DataType), StringValue: value.String, BinaryValue: value.Binary}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrPreparedForm, err)
	}
	if err := decoded.check(); err != nil {
		return fmt.Errorf("%w: %w", ErrPreparedForm, err)
	}
	*m = decoded
	return nil
}

// parseUniqueMode returns the unique mode named name (UniqueMode.String).
func parseUniqueMode(name string) (UniqueMode, bool) {
	for _, mode := range []UniqueMode{UniqueUntilWindowEnds, UniqueUntilDone, UniqueUntilStarted} {
		if mode.String() == name {
			return mode, true
		}
	}
	return 0, false
}

func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func parseDurationText(text string) (time.Duration, error) {
	if text == "" {
		return 0, nil
	}
	return time.ParseDuration(text)
}
