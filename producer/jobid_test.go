package producer

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
)

// TestPrepareGivesEveryJobAnID: a new ULID per job, in the order made, kept through the
// JSON form (the outbox's stored form); a chosen id is kept as it is.
func TestPrepareGivesEveryJobAnID(t *testing.T) {
	var ids []string
	for range 100 {
		prepared, err := Prepare(standardURL, Job{Type: "t", Body: "x"})
		require.NoError(t, err)
		_, err = ulid.ParseStrict(prepared.JobID())
		require.NoError(t, err, "job id %q", prepared.JobID())
		ids = append(ids, prepared.JobID())
	}
	for i := 1; i < len(ids); i++ {
		assert.Less(t, ids[i-1], ids[i], "ids sort in the order they were made")
	}

	prepared, err := Prepare(standardURL, Job{ID: "order-42-charge", Body: "x"})
	require.NoError(t, err)
	assert.Equal(t, "order-42-charge", prepared.JobID())
	encoded, err := json.Marshal(prepared)
	require.NoError(t, err)
	var back Prepared
	require.NoError(t, json.Unmarshal(encoded, &back))
	assert.Equal(t, "order-42-charge", back.JobID())
}

func TestPrepareRefusesAnInvalidJobID(t *testing.T) {
	for name, id := range map[string]string{"too long": strings.Repeat("j", MaxJobIDBytes+1), "not UTF-8": "j\xff"} {
		_, err := Prepare(standardURL, Job{ID: id, Body: "x"})
		assert.ErrorContains(t, err, "Job.ID", name)
	}
	_, err := Prepare(standardURL, Job{ID: strings.Repeat("j", MaxJobIDBytes), Body: "x"})
	assert.NoError(t, err)
}

// TestJobIDCountsInTheAttributeBudget: the job id is one of SQS's 10 attributes, as the
// job type is: 8 of the job's own with a type fit, 9 do not.
func TestJobIDCountsInTheAttributeBudget(t *testing.T) {
	own := func(n int) map[string]types.MessageAttributeValue {
		attributes := map[string]types.MessageAttributeValue{}
		for i := range n {
			attributes["a"+strconv.Itoa(i)] = stringValue("x")
		}
		return attributes
	}
	prepared, err := Prepare(standardURL, Job{Type: "t", Body: "x", Attributes: own(8)})
	require.NoError(t, err)
	assert.Len(t, prepared.Attributes, 10)
	_, err = Prepare(standardURL, Job{Type: "t", Body: "x", Attributes: own(9)})
	assert.ErrorContains(t, err, "9 user attributes + 2 sqsworker attributes exceed the SQS limit of 10")
}

// TestSendsCarryTheJobID: Send, SendBatch (whose results name the ids) and SendPrepared
// send the job id attribute; a Prepared sent twice (an outbox relay's retry) keeps its.
func TestSendsCarryTheJobID(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{})
	ctx := context.Background()
	_, err := p.Send(ctx, standardURL, Job{ID: "one", Body: "x"})
	require.NoError(t, err)
	results, err := p.SendBatch(ctx, standardURL, []Job{{Body: "a"}, {ID: "three", Body: "b"}})
	require.NoError(t, err)
	assert.Equal(t, "three", results[1].JobID)
	prepared, err := Prepare(standardURL, Job{Body: "c"})
	require.NoError(t, err)
	for range 2 {
		_, err = p.SendPrepared(ctx, prepared)
		require.NoError(t, err)
	}
	sent := fake.sent() // the single sends first, then the batch's entries
	require.Len(t, sent, 5)
	assert.Equal(t, "one", sent[0].attribute(sqsworker.AttributeJobID))
	assert.Equal(t, prepared.JobID(), sent[1].attribute(sqsworker.AttributeJobID))
	assert.Equal(t, prepared.JobID(), sent[2].attribute(sqsworker.AttributeJobID))
	assert.NotEmpty(t, results[0].JobID)
	assert.Equal(t, results[0].JobID, sent[3].attribute(sqsworker.AttributeJobID))
	assert.Equal(t, "three", sent[4].attribute(sqsworker.AttributeJobID))
}

// TestDerivedJobID: the same name and time give the same ULID, with that time; another
// name another id.
func TestDerivedJobID(t *testing.T) {
	at := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	id := DerivedJobID(at, "nightly/2026-12-03T02:00:00Z")
	assert.Equal(t, id, DerivedJobID(at, "nightly/2026-12-03T02:00:00Z"))
	assert.NotEqual(t, id, DerivedJobID(at, "hourly/2026-12-03T02:00:00Z"))
	parsed, err := ulid.ParseStrict(id)
	require.NoError(t, err)
	assert.Equal(t, at, ulid.Time(parsed.Time()).UTC())
}
