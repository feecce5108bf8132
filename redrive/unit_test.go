package redrive

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
)

func TestPackBatches(t *testing.T) {
	t.Parallel()
	sizes := func(values ...int) []*item {
		items := make([]*item, len(values))
		for i, size := range values {
			items[i] = &item{size: size}
		}
		return items
	}
	shape := func(batches [][]*item) string {
		var parts []string
		for _, batch := range batches {
			var sizes []string
			for _, it := range batch {
				sizes = append(sizes, fmt.Sprint(it.size))
			}
			parts = append(parts, strings.Join(sizes, "+"))
		}
		return strings.Join(parts, " | ")
	}
	tests := []struct {
		name     string
		items    []*item
		maxCount int
		maxBytes int
		want     string
	}{
		{name: "empty", items: nil, maxCount: 10, maxBytes: 100, want: ""},
		{name: "count limit", items: sizes(1, 1, 1, 1, 1), maxCount: 2, maxBytes: 100, want: "1+1 | 1+1 | 1"},
		{name: "byte limit", items: sizes(40, 40, 40, 100, 10), maxCount: 10, maxBytes: 100, want: "40+40 | 40 | 100 | 10"},
		{name: "exactly at the limit", items: sizes(50, 50, 1), maxCount: 10, maxBytes: 100, want: "50+50 | 1"},
		{name: "order kept", items: sizes(90, 5, 90, 5), maxCount: 10, maxBytes: 100, want: "90+5 | 90+5"},
		{name: "c17 at 1 MiB", items: sizes(204800, 204800, 204800, 204800, 204800, 204800, 1048576), maxCount: 10, maxBytes: 1048576,
			want: "204800+204800+204800+204800+204800 | 204800 | 1048576"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := shape(packBatches(tc.items, tc.maxCount, tc.maxBytes)); got != tc.want {
				t.Fatalf("packBatches = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNextDeduplicationID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 127)
	tests := []struct {
		name, orig, want string
	}{
		{name: "first redrive", orig: "abc", want: "abc-r1"},
		{name: "second redrive", orig: "abc-r1", want: "abc-r2"},
		{name: "tenth", orig: "abc-r9", want: "abc-r10"},
		{name: "not a counter", orig: "abc-rx", want: "abc-rx-r1"},
		{name: "leading zero is not a counter", orig: "abc-r01", want: "abc-r01-r1"},
		{name: "too long", orig: long}, // checked below: hashed, then -r1
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NextDeduplicationID(tc.orig)
			if tc.orig == long {
				if len(got) > maxDeduplicationIDLength || !strings.HasSuffix(got, "-r1") || len(got) != 64+3 {
					t.Fatalf("NextDeduplicationID(127 chars) = %q, want a 64-hex hash and -r1", got)
				}
				if NextDeduplicationID(tc.orig) != got {
					t.Fatal("not deterministic")
				}
				return
			}
			if got != tc.want {
				t.Fatalf("NextDeduplicationID(%q) = %q, want %q", tc.orig, got, tc.want)
			}
		})
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	message := &sqsworker.Message{
		Body: `{"payload":{"type":"x","count":3,"ok":true,"nested":{"k":"v"}},"list":[1]}`,
		MessageAttributes: map[string]sqsworker.MessageAttribute{
			"failure-reason": {DataType: "String", StringValue: "HTTP410"},
			"tenant":         {DataType: "String", StringValue: "acme"},
			"blob":           {DataType: "Binary", BinaryValue: []byte("acme")},
		},
	}
	tests := []struct {
		expression string
		want       bool
	}{
		{"attr:failure-reason=HTTP410", true},
		{"attr:failure-reason=HTTP500", false},
		{"reason:HTTP410", true},
		{"attr:tenant=acme", true},
		{"attr:blob=acme", false},
		{"attr:missing=", false},
		{"json:payload.type=x", true},
		{"json:payload.type=y", false},
		{"json:payload.count=3", true},
		{"json:payload.ok=true", true},
		{"json:payload.nested.k=v", true},
		{"json:payload.nested={\"k\":\"v\"}", true},
		{"json:payload.missing=x", false},
		{"json:list.0=1", false},
		{"!reason:HTTP410", false},
		{"!reason:MalformedBody", true},
		{"!json:payload.missing=x", true},
	}
	for _, tc := range tests {
		t.Run(tc.expression, func(t *testing.T) {
			filter, err := ParseFilter(tc.expression)
			if err != nil {
				t.Fatal(err)
			}
			if got := filter(message); got != tc.want {
				t.Fatalf("%s matched = %v, want %v", tc.expression, got, tc.want)
			}
		})
	}
	if JSONFieldEquals("a", "b")(&sqsworker.Message{Body: "not json"}) {
		t.Fatal("a body that is not JSON matched")
	}
	if !All()(message) || All(FailureReason("HTTP410"), AttributeEquals("tenant", "other"))(message) {
		t.Fatal("All combines filters with AND")
	}
	for _, bad := range []string{"", "!", "reason:", "attr:=x", "attr:name", "json:a..b=1", "body:x", "noprefix", "!body:x"} {
		if _, err := ParseFilter(bad); err == nil || !strings.HasPrefix(err.Error(), "redrive: ") {
			t.Errorf("ParseFilter(%q) err = %v, want a redrive: error", bad, err)
		}
	}
}

func TestMessageSize(t *testing.T) {
	t.Parallel()
	message := &sqsworker.Message{
		Body: "12345",
		MessageAttributes: map[string]sqsworker.MessageAttribute{
			"ab":  {DataType: "String", StringValue: "xyz"},        // 2 + 6 + 3
			"bin": {DataType: "Binary", BinaryValue: []byte{1, 2}}, // 3 + 6 + 2
		},
	}
	if got, want := sqsx.MessageSize(message), 5+11+11; got != want {
		t.Fatalf("MessageSize = %d, want %d", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	_, err := NewMover(nil, Config{Source: "q", Destination: "q", MaxMessages: -1, RatePerSecond: -1, WaitTime: 21e9, SendAttempts: -1})
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{"Destination must differ", "MaxMessages -1", "RatePerSecond -1", "WaitTime 21s", "SendAttempts -1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %q", err, want)
		}
	}
	_, err = NewMover(nil, Config{})
	if !strings.Contains(err.Error(), "Source is required") || !strings.Contains(err.Error(), "Destination is required") {
		t.Fatalf("err = %v, want both required fields reported", err)
	}
	if _, err := NewMover(nil, Config{Source: "a", Destination: "b"}); err == nil || !strings.HasPrefix(err.Error(), "redrive: ") {
		t.Fatalf("nil client: err = %v", err)
	}
	var active error = &ActiveTaskError{Err: errors.New("x")}
	if !errors.Is(active, ErrMoveTaskActive) {
		t.Fatal("ActiveTaskError does not match ErrMoveTaskActive")
	}
}

// TestPeekResultJSONRetentionInSeconds: retention_seconds is seconds (a time.Duration
// marshalled as nanoseconds printed 90000000000 for a 90 s queue).
func TestPeekResultJSONRetentionInSeconds(t *testing.T) {
	encoded, err := json.Marshal(PeekResult{QueueURL: "q", Retention: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(encoded, &fields); err != nil || fields["retention_seconds"] != 90.0 {
		t.Errorf("JSON %s, want retention_seconds 90", encoded)
	}
}

// TestDeadLetterExpiryBasis follows the AWS rule (Setting-up dead-letter queue retention):
// a standard queue keeps the original enqueue time on a redrive-policy move, a FIFO queue
// resets it; a host's own dead-letter send is a new message on both.
func TestDeadLetterExpiryBasis(t *testing.T) {
	sent := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := sent.Add(time.Hour)
	host := map[string]sqsworker.MessageAttribute{sqsworker.AttributeFailureReason: {DataType: "String", StringValue: "HTTP410"}}
	for _, tc := range []struct {
		name       string
		fifo       bool
		attributes map[string]sqsworker.MessageAttribute
		exact      bool
		basis      string
	}{
		{"standard, redrive policy", false, nil, true, ExpiryBasisOriginalEnqueue},
		{"standard, host send", false, host, true, ExpiryBasisDeadLetterSend},
		{"FIFO, redrive policy", true, nil, false, ExpiryBasisFIFOMove},
		{"FIFO, host send", true, host, true, ExpiryBasisDeadLetterSend},
	} {
		letter := deadLetterOf(&sqsworker.Message{ID: "m", SentAt: sent, MessageAttributes: tc.attributes}, tc.fifo, 24*time.Hour, now)
		if letter.ExpiryExact != tc.exact || letter.ExpiryBasis != tc.basis || !letter.ExpiresAt.Equal(sent.Add(24*time.Hour)) {
			t.Errorf("%s: exact %v basis %q expires %s; want %v %q %s", tc.name, letter.ExpiryExact, letter.ExpiryBasis, letter.ExpiresAt, tc.exact, tc.basis, sent.Add(24*time.Hour))
		}
	}
}

// The redrive count and the move id are set, replacing received values, each only if it
// fits: the count first, then the move id.
func TestMoveAttributes(t *testing.T) {
	text := func(value string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
	}
	count := func(value string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(value)}
	}
	several := func(n int) map[string]types.MessageAttributeValue {
		attributes := map[string]types.MessageAttributeValue{}
		for i := range n {
			attributes[strconv.Itoa(i)] = text("v")
		}
		return attributes
	}
	const moveID = "0123456789abcdef0123456789abcdef"
	countAdded := len(AttributeRedriveCount) + len("Number") + 1
	moveAdded := len(AttributeMoveID) + len("String") + len(moveID)
	tests := []struct {
		name       string
		attributes map[string]types.MessageAttributeValue
		maxBytes   int
		wantCount  string // "" when the attribute is not sent
		wantMove   bool
		wantGrowth int
	}{
		{name: "first move", attributes: map[string]types.MessageAttributeValue{"tenant": text("T1")}, maxBytes: 1000, wantCount: "1", wantMove: true, wantGrowth: countAdded + moveAdded},
		{name: "no attributes", maxBytes: 1000, wantCount: "1", wantMove: true, wantGrowth: countAdded + moveAdded},
		{name: "counts on", attributes: map[string]types.MessageAttributeValue{AttributeRedriveCount: count("9")}, maxBytes: 1000, wantCount: "10", wantMove: true, wantGrowth: 1 + moveAdded},
		{name: "an earlier move's id replaced", attributes: map[string]types.MessageAttributeValue{AttributeRedriveCount: count("1"), AttributeMoveID: text("ffffffffffffffffffffffffffffffff")},
			maxBytes: 1000, wantCount: "2", wantMove: true},
		{name: "nine attributes: room for the count only", attributes: several(9), maxBytes: 1000, wantCount: "1", wantGrowth: countAdded},
		{name: "ten attributes", attributes: several(10), maxBytes: 1000},
		{name: "at the size limit", attributes: map[string]types.MessageAttributeValue{"tenant": text("T1")}, maxBytes: 100},
		{name: "bytes for the count only", attributes: map[string]types.MessageAttributeValue{"tenant": text("T1")}, maxBytes: 100 + countAdded, wantCount: "1", wantGrowth: countAdded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{Mover: &Mover{config: Config{Logger: slog.New(slog.DiscardHandler)}}, maxBytes: tc.maxBytes, start: &startLine{moveID: moveID}}
			raw := types.Message{MessageId: aws.String("m"), Body: aws.String("b"), MessageAttributes: tc.attributes}
			message := convertMessage("q", raw)
			const size = 100 // as if the message were 100 bytes
			got, gotSize := r.moveAttributes(raw, message, size)
			if value := aws.ToString(got[AttributeRedriveCount].StringValue); value != tc.wantCount {
				t.Errorf("%s = %q, want %q", AttributeRedriveCount, value, tc.wantCount)
			}
			if value := aws.ToString(got[AttributeMoveID].StringValue); (value == moveID) != tc.wantMove {
				t.Errorf("%s = %q, want it set: %v", AttributeMoveID, value, tc.wantMove)
			}
			if gotSize != size+tc.wantGrowth {
				t.Errorf("size = %d, want %d", gotSize, size+tc.wantGrowth)
			}
			if tc.wantCount == "" && !maps.EqualFunc(got, tc.attributes, func(a, b types.MessageAttributeValue) bool {
				return aws.ToString(a.StringValue) == aws.ToString(b.StringValue)
			}) {
				t.Errorf("attributes = %v, want the %d received ones unchanged", got, len(tc.attributes))
			}
			if len(tc.attributes) > 0 && len(raw.MessageAttributes) != len(tc.attributes) {
				t.Errorf("the received attributes were changed: %v", raw.MessageAttributes)
			}
		})
	}
}

// A message is a later arrival by this move's id, by a message id this move's sends
// returned, or by a SentTimestamp at or after the start; anything else was there.
func TestStartLineArrived(t *testing.T) {
	at := time.UnixMilli(1_700_000_001_000)
	line := &startLine{moveID: "this-move", at: at, sent: map[string]bool{"sent-1": true}}
	sentAt := func(ms int64) map[string]string {
		return map[string]string{string(types.MessageSystemAttributeNameSentTimestamp): strconv.FormatInt(ms, 10)}
	}
	before := sentAt(at.UnixMilli() - 1)
	move := func(id string) map[string]types.MessageAttributeValue {
		return map[string]types.MessageAttributeValue{AttributeMoveID: {DataType: aws.String("String"), StringValue: aws.String(id)}}
	}
	for name, tc := range map[string]struct {
		message types.Message
		want    bool
	}{
		"present":              {types.Message{MessageId: aws.String("old"), Attributes: before}, false},
		"an earlier move's id": {types.Message{MessageId: aws.String("old"), Attributes: before, MessageAttributes: move("other-move")}, false},
		"this move's id":       {types.Message{MessageId: aws.String("copy"), Attributes: before, MessageAttributes: move("this-move")}, true},
		"a message id it sent": {types.Message{MessageId: aws.String("sent-1"), Attributes: before}, true},
		"sent at the start":    {types.Message{MessageId: aws.String("new"), Attributes: sentAt(at.UnixMilli())}, true},
		"sent after the start": {types.Message{MessageId: aws.String("new"), Attributes: sentAt(at.UnixMilli() + 5000)}, true},
		"no SentTimestamp":     {types.Message{MessageId: aws.String("old")}, false},
		"a bad SentTimestamp":  {types.Message{MessageId: aws.String("old"), Attributes: map[string]string{"SentTimestamp": "soon"}}, false},
	} {
		if got := line.arrived(tc.message); got != tc.want {
			t.Errorf("%s: arrived = %v, want %v", name, got, tc.want)
		}
	}
}

// A FAILED task's error carries SQS's reason; without a destination it also names the
// likely cause, the worker's own dead-letter copies.
func TestMoveTaskErr(t *testing.T) {
	if err := (MoveTask{Status: MoveTaskCompleted}).Err(); err != nil {
		t.Fatalf("a COMPLETED task: %v", err)
	}
	failed := MoveTask{Status: MoveTaskFailed, SourceARN: "arn:aws:sqs:us-east-1:1:q-dlq", Moved: 1, ToMove: 3, FailureReason: "AttributeError"}
	err := failed.Err()
	if !errors.Is(err, ErrMoveTaskFailed) || !strings.Contains(err.Error(), "after moving 1 of 3: AttributeError") ||
		!strings.Contains(err.Error(), "dead-lettered by the worker itself, not by SQS's redrive policy") {
		t.Fatalf("without a destination: %v", err)
	}
	failed.DestinationARN, failed.FailureReason = "arn:aws:sqs:us-east-1:1:q", ""
	if err := failed.Err(); !errors.Is(err, ErrMoveTaskFailed) || strings.Contains(err.Error(), "worker") || !strings.HasSuffix(err.Error(), "no reason given") {
		t.Fatalf("with a destination: %v", err)
	}
}

// The start is SQS's Date header rounded up to the next second, or the local clock when
// it is later by at most 5 s (a cached header), never more than 5 s after the header.
func TestStartTime(t *testing.T) {
	date := time.Date(2026, 12, 1, 20, 5, 48, 0, time.UTC) // whole seconds, as the header has them
	for name, tc := range map[string]struct {
		server, local, want time.Time
	}{
		"no Date header":             {local: date, want: date},
		"local clock behind":         {server: date, local: date.Add(-time.Minute), want: date.Add(time.Second)},
		"within the header's second": {server: date, local: date.Add(300 * time.Millisecond), want: date.Add(time.Second)},
		"a cached header 1.8 s old":  {server: date, local: date.Add(1800 * time.Millisecond), want: date.Add(1800 * time.Millisecond)},
		"local clock minutes ahead":  {server: date, local: date.Add(5 * time.Minute), want: date.Add(6 * time.Second)},
	} {
		if got := startTime(tc.server, tc.local); !got.Equal(tc.want) {
			t.Errorf("%s: start %s, want %s", name, got, tc.want)
		}
	}
}
