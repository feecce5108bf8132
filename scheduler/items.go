package scheduler

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The attributes of the scheduler's items. Times are epoch milliseconds; no item relies
// on DynamoDB's TTL.
const (
	attrID        = "id"
	attrOwner     = "owner"
	attrToken     = "token"
	attrExpiry    = "expiry_ms"
	attrAcquired  = "acquired_ms"
	attrTick      = "tick_ms"
	attrTickID    = "tick_id"
	attrSent      = "sent"
	attrSends     = "sends"
	attrMessageID = "message_id"
	attrEnqueued  = "enqueued_ms"
)

// ErrMalformedItem is matched (errors.Is) by the error for an item under one of the
// scheduler's ids that is not what the scheduler writes there: an attribute missing or
// of another type, a number out of range, a tick id of another schedule. Such an item
// was written by something else (another program on the table, or a hand edit). The
// scheduler logs it and never takes it for a lease or a tick: it leaves it alone and
// tries again with a backoff, so a fixed or deleted item lets it go on.
var ErrMalformedItem = errors.New("scheduler: malformed item")

// malformed returns the error for the item id: what is wrong with it.
func malformed(table, id, problem string) error {
	return fmt.Errorf("%w %q in table %s: %s (the scheduler leaves it alone; delete or fix it)", ErrMalformedItem, id, table, problem)
}

// Lease is the leader lease as stored.
type Lease struct {
	// Name is the lease's name (Config.LeaseName).
	Name string `json:"name"`
	// Owner is the replica holding it (Config.Owner).
	Owner string `json:"owner"`
	// Token is the fencing token: 1 for the first holder, incremented at each takeover.
	Token int64 `json:"token"`
	// Expiry is when the lease lapses unless renewed (the writer's clock).
	Expiry time.Time `json:"expiry"`
	// Acquired is when Owner took it.
	Acquired time.Time `json:"acquired"`
}

// tickState is a schedule's state item: the last tick claimed and whether it was sent.
type tickState struct {
	tick      time.Time // the last tick claimed, skipped, or the baseline (then tickID is "")
	tickID    string    // the claimed tick's id while !sent, else the last enqueued tick's id
	token     int64     // the token of the lease under which the item was last written
	sent      bool
	sends     int // how many times the claimed tick was claimed to be sent (1 at first)
	messageID string
	enqueued  time.Time
	// sentID remembers, in this replica only, the message id of a claimed tick that was
	// sent but whose record failed: it is recorded, not sent again.
	sentID string
}

// itemReader decodes one item's attributes, noting the first problem.
type itemReader struct {
	item    map[string]types.AttributeValue
	problem string
}

func (r *itemReader) fail(format string, args ...any) {
	if r.problem == "" {
		r.problem = fmt.Sprintf(format, args...)
	}
}

// number reads a required (or, if optional, possibly absent) integer attribute of at
// least minimum.
func (r *itemReader) number(name string, minimum int64, optional bool) int64 {
	value, ok := r.item[name]
	if !ok {
		if !optional {
			r.fail("attribute %s is missing", name)
		}
		return 0
	}
	n, ok := value.(*types.AttributeValueMemberN)
	if !ok {
		r.fail("attribute %s is not a number", name)
		return 0
	}
	parsed, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil || parsed < minimum {
		r.fail("attribute %s is %q, not an integer of at least %d", name, n.Value, minimum)
		return 0
	}
	return parsed
}

// text reads a string attribute; a required one must not be empty.
func (r *itemReader) text(name string, optional bool) string {
	value, ok := r.item[name]
	if !ok {
		if !optional {
			r.fail("attribute %s is missing", name)
		}
		return ""
	}
	s, ok := value.(*types.AttributeValueMemberS)
	if !ok || (!optional && s.Value == "") {
		r.fail("attribute %s is not a non-empty string", name)
		return ""
	}
	return s.Value
}

// boolean reads a required boolean attribute.
func (r *itemReader) boolean(name string) bool {
	b, ok := r.item[name].(*types.AttributeValueMemberBOOL)
	if !ok {
		r.fail("attribute %s is missing or not a boolean", name)
		return false
	}
	return b.Value
}

// decodeLease checks and decodes a lease item.
func decodeLease(table, name string, item map[string]types.AttributeValue) (Lease, error) {
	r := &itemReader{item: item}
	lease := Lease{
		Name:     name,
		Owner:    r.text(attrOwner, false),
		Token:    r.number(attrToken, 1, false),
		Expiry:   millis(r.number(attrExpiry, 0, false)),
		Acquired: millis(r.number(attrAcquired, 0, false)),
	}
	if r.problem != "" {
		return Lease{}, malformed(table, leaseID(name), r.problem)
	}
	return lease, nil
}

// decodeState checks and decodes a schedule's state item: a claimed tick must carry
// the schedule's id of that tick; a recorded one, an id of the schedule.
func decodeState(table, schedule string, item map[string]types.AttributeValue) (tickState, error) {
	r := &itemReader{item: item}
	state := tickState{
		tick:      millis(r.number(attrTick, 1, false)),
		token:     r.number(attrToken, 1, false),
		sent:      r.boolean(attrSent),
		tickID:    r.text(attrTickID, true),
		sends:     int(r.number(attrSends, 1, true)),
		messageID: r.text(attrMessageID, true),
		enqueued:  millis(r.number(attrEnqueued, 0, true)),
	}
	if r.problem == "" && (!state.sent || state.tickID != "") {
		at, start, err := parseTickID(schedule, state.tickID)
		claimedAt := state.tick
		if start {
			claimedAt = claimedAt.Truncate(time.Second) // a start tick's id names its second
		}
		switch {
		case err != nil:
			r.fail("%s", err)
		case !state.sent && !at.Equal(claimedAt):
			r.fail("the claimed tick %s is not the tick at %s", state.tickID, attrTick)
		}
	}
	if r.problem != "" {
		return tickState{}, malformed(table, stateID(schedule), r.problem)
	}
	if !state.sent && state.sends == 0 {
		state.sends = 1 // written before sends were counted
	}
	return state, nil
}

func str(value string) types.AttributeValue { return &types.AttributeValueMemberS{Value: value} }

func num(value int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(value, 10)}
}

func boolean(value bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: value} }

// millis converts epoch milliseconds to a UTC time; 0 is the zero time.
func millis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
