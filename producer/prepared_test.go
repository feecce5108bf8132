package producer

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
)

func TestPreparedSurvivesItsJSONForm(t *testing.T) {
	prepared, err := Prepare(standardURL, Job{
		Type: "report", Payload: map[string]int{"month": 11}, IdempotencyKey: "r-11",
		Delay: 40 * time.Minute, GroupID: "tenant-3", UniqueKey: "report-11",
		UniqueFor: 2 * time.Hour, UniqueMode: UniqueUntilDone,
		Attributes: map[string]types.MessageAttributeValue{
			"count": {DataType: aws.String("Number"), StringValue: aws.String("3")},
			"blob":  {DataType: aws.String("Binary.gz"), BinaryValue: []byte{0, 1, 2}},
		},
	})
	require.NoError(t, err)
	assert.Equal(t, "report", prepared.Type())
	assert.Equal(t, "r-11", prepared.IdempotencyKey())
	encoded, err := json.Marshal(prepared)
	require.NoError(t, err)
	assert.Contains(t, string(encoded), `"v":1`)
	assert.Contains(t, string(encoded), `"delay":"40m0s"`)
	assert.Contains(t, string(encoded), `"unique_mode":"until-done"`)
	var decoded Prepared
	require.NoError(t, json.Unmarshal(encoded, &decoded))
	assert.Equal(t, prepared, decoded)

	fifo, err := Prepare(fifoURL, Job{Body: "b", GroupID: "g", UniqueKey: "k"})
	require.NoError(t, err)
	assert.Equal(t, "k", fifo.DeduplicationID, "a FIFO queue's unique key is its deduplication id")
}

func TestPreparedRefusesUnknownVersionsAndMalformedForms(t *testing.T) {
	for name, form := range map[string]string{
		"unknown version":    `{"v":2,"queue":"` + standardURL + `","body":"b"}`,
		"no version":         `{"queue":"` + standardURL + `","body":"b"}`,
		"not JSON":           `{"v":1,`,
		"bad delay":          `{"v":1,"queue":"` + standardURL + `","body":"b","delay":"soon"}`,
		"unknown mode":       `{"v":1,"queue":"` + standardURL + `","body":"b","unique_key":"k","unique_mode":"forever"}`,
		"attribute no type":  `{"v":1,"queue":"` + standardURL + `","body":"b","attributes":{"a":{"s":"x"}}}`,
		"empty body":         `{"v":1,"queue":"` + standardURL + `","body":""}`,
		"FIFO without group": `{"v":1,"queue":"` + fifoURL + `","body":"b"}`,
		"dedup on standard":  `{"v":1,"queue":"` + standardURL + `","body":"b","dedup":"d"}`,
	} {
		t.Run(name, func(t *testing.T) {
			var decoded Prepared
			err := decoded.UnmarshalJSON([]byte(form))
			require.ErrorIs(t, err, ErrPreparedForm)
			require.Error(t, json.Unmarshal([]byte(form), &decoded))
			assert.Equal(t, Prepared{}, decoded, "nothing decoded")
		})
	}
}

func TestPrepareRefusesWhatSendRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		queue string
		job   Job
	}{
		"both bodies":       {standardURL, Job{Body: "b", Payload: 1}},
		"no body":           {standardURL, Job{}},
		"negative delay":    {standardURL, Job{Body: "b", Delay: -time.Second}},
		"FIFO delay":        {fifoURL, Job{Body: "b", GroupID: "g", Delay: time.Second}},
		"FIFO no group":     {fifoURL, Job{Body: "b"}},
		"dedup on standard": {standardURL, Job{Body: "b", DeduplicationID: "d"}},
		"mode without key":  {standardURL, Job{Body: "b", UniqueMode: UniqueUntilDone}},
		"window too short":  {standardURL, Job{Body: "b", UniqueKey: "k", UniqueFor: time.Millisecond}},
		"FIFO unique mode":  {fifoURL, Job{Body: "b", GroupID: "g", UniqueKey: "k", UniqueMode: UniqueUntilStarted}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Prepare(c.queue, c.job)
			require.Error(t, err)
			_, sendErr := newProducer(t, newFake(), Config{Unique: newMemoryUnique()}).Send(context.Background(), c.queue, c.job)
			assert.Equal(t, err, sendErr, "Send refuses it with the same error")
		})
	}
}

func TestSendPreparedSendsAsSendDoes(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{MaxHop: time.Minute, Unique: newMemoryUnique()})
	job := Job{Type: "report", Body: "b", Delay: 5 * time.Minute, UniqueKey: "k", UniqueMode: UniqueUntilStarted}
	prepared, err := Prepare(standardURL, job)
	require.NoError(t, err)
	encoded, err := json.Marshal(prepared)
	require.NoError(t, err)
	var decoded Prepared
	require.NoError(t, json.Unmarshal(encoded, &decoded))
	id, err := p.SendPrepared(context.Background(), decoded)
	require.NoError(t, err)
	_, err = p.SendPrepared(context.Background(), decoded)
	var duplicate *DuplicateJobError
	require.ErrorAs(t, err, &duplicate, "the unique key is reserved at the send")
	assert.Equal(t, id, duplicate.MessageID)

	sent := fake.sent()
	require.Len(t, sent, 1)
	assert.EqualValues(t, 60, sent[0].delay, "the first hop")
	assert.NotEmpty(t, sent[0].attribute(sqsworker.AttributeDueAt), "the due time, counted from the send")
	assert.NotEmpty(t, sent[0].attribute(AttributeUniqueRelease))
	assert.Equal(t, "report", sent[0].attribute(sqsworker.AttributeJobType))

	decoded.Delay = -time.Second
	_, err = p.SendPrepared(context.Background(), decoded)
	require.ErrorContains(t, err, "negative", "a Prepared changed by hand is checked again")
}

func TestSendPreparedBatchSendsEachQueueInItsCalls(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{})
	var messages []Prepared
	for _, queue := range []string{standardURL, fifoURL, standardURL} {
		m, err := Prepare(queue, Job{Body: "b", GroupID: "g"})
		require.NoError(t, err)
		messages = append(messages, m)
	}
	results, err := p.SendPreparedBatch(context.Background(), messages)
	require.NoError(t, err)
	require.Len(t, results, 3)
	for _, result := range results {
		assert.NotEmpty(t, result.MessageID)
	}
	assert.Equal(t, 2, fake.batchCalls(), "one call per queue")
}
