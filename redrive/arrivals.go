package redrive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// AttributeMoveID is the message attribute (String) a [Mover] adds to each message it
// sends: the id of the move ([Result.MoveID]), replacing an earlier move's. A copy that
// fails again and comes back to the source during the same move (the worker's own
// dead-letter copy keeps the attributes, and so does SQS's redrive policy) is recognised
// by it and left there. It is added after [AttributeRedriveCount], and only when it fits
// (an 11th attribute, or more bytes than the destination allows, is not added); a copy
// without it is still recognised by its message id or its SentTimestamp (see [Mover]).
const AttributeMoveID = "x-redrive-move-id"

// dateResolution is the precision of the HTTP Date header the start time is read from.
const dateResolution = time.Second

// maxDateLag is how far ahead of SQS's Date header the local clock is trusted for the
// start: enough for a cached header (ElasticMQ's lags up to about 2 s), not for a local
// clock that is minutes fast.
const maxDateLag = 5 * time.Second

// startLine tells the messages that were in the source when a move started from those
// that reached it during the move, which the move leaves where they are: a message is a
// later arrival when
//
//   - it carries this move's AttributeMoveID (a copy this move sent, back again), or
//   - its message id is one this move's sends returned (SQS's redrive policy keeps the
//     message id when it moves a message to the dead-letter queue), or
//   - its SentTimestamp is at or after the start. SQS keeps the original enqueue time of
//     a message its redrive policy moves into a standard dead-letter queue and resets it
//     for a FIFO one (SQS Developer Guide, "Setting-up dead-letter queue retention"); a
//     dead-letter copy a worker sends is a new message. Either way, every message that
//     was present at the start was enqueued before it.
type startLine struct {
	moveID string
	// at is the start: SQS's clock (the Date header of the first GetQueueAttributes
	// answer, whole seconds, moved to the end of that second), or the local clock after
	// that answer when it is later by at most maxDateLag (ElasticMQ 1.7.1 renders a cached
	// Date header, seen 1.8 s old), so that no message enqueued before the start counts as
	// later; the local clock alone without a Date header.
	at time.Time
	// count is ApproximateNumberOfMessages plus ApproximateNumberOfMessagesNotVisible at
	// the start: how many messages the move expects to meet.
	count int
	sent  map[string]bool
}

// begin reads the source's message counts and SQS's time: the move's start line.
func (r *run) begin(ctx context.Context) error {
	counts, err := r.counts(ctx)
	if err != nil {
		return err
	}
	r.start = &startLine{moveID: newMoveID(), at: startTime(counts.at, time.Now()), count: counts.visible + counts.hidden, sent: map[string]bool{}}
	r.result.MoveID = r.start.moveID
	return nil
}

// startTime is a move's start from SQS's Date header (zero when absent) and the local
// clock (see startLine.at).
func startTime(server, local time.Time) time.Time {
	if server.IsZero() {
		return local
	}
	server = server.Truncate(dateResolution).Add(dateResolution)
	switch {
	case local.Before(server):
		return server
	case local.After(server.Add(maxDateLag)):
		return server.Add(maxDateLag)
	default:
		return local
	}
}

// arrived reports whether raw reached the source after the move started.
func (s *startLine) arrived(raw types.Message) bool {
	if attribute, ok := raw.MessageAttributes[AttributeMoveID]; ok && aws.ToString(attribute.StringValue) == s.moveID {
		return true
	}
	if s.sent[aws.ToString(raw.MessageId)] {
		return true
	}
	sent, err := strconv.ParseInt(raw.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	return err == nil && !time.UnixMilli(sent).Before(s.at)
}

// newMoveID returns 16 random bytes, hex-encoded.
func newMoveID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error (Go 1.24+)
	return hex.EncodeToString(b)
}

// queueCounts are the source's message counts and the time SQS answered.
type queueCounts struct {
	visible, hidden int
	at              time.Time // zero without a Date header
}

// counts reads the source's ApproximateNumberOfMessages (visible) and
// ApproximateNumberOfMessagesNotVisible (in flight) in one GetQueueAttributes call.
func (r *run) counts(ctx context.Context) (queueCounts, error) {
	output, err := r.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(r.config.Source),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
	})
	if err != nil {
		return queueCounts{}, fmt.Errorf("redrive: reading the message counts of %s: %w", r.config.Source, err)
	}
	var counts queueCounts
	counts.visible, _ = strconv.Atoi(output.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	counts.hidden, _ = strconv.Atoi(output.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	counts.at, _ = awsmiddleware.GetServerTime(output.ResultMetadata)
	return counts, nil
}
