package lambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/stretchr/testify/assert"
)

// fifoLog records handler calls per message group, and overall.
type fifoLog struct {
	mu      sync.Mutex
	all     []string
	byGroup map[string][]string
}

func (l *fifoLog) add(group, entry string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byGroup == nil {
		l.byGroup = map[string][]string{}
	}
	l.all = append(l.all, entry)
	l.byGroup[group] = append(l.byGroup[group], entry)
}

// fifoHandler fails a2 on its first attempt only, as in C04.
func fifoHandler(log *fifoLog) sqsworker.Handler {
	return sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		key := decodeJob(m.Body).Key
		if key == "a2" && m.ReceiveCount == 1 {
			log.add(m.GroupID, key+"(fail)")
			return errors.New("downstream 503")
		}
		log.add(m.GroupID, key)
		return nil
	})
}

// fifoID returns the message id of key in testdata/fifo_event.json.
func fifoID(t testing.TB, event events.SQSEvent, key string) string {
	t.Helper()
	for _, record := range event.Records {
		if strings.HasPrefix(record.MessageId, key+"-") {
			return record.MessageId
		}
	}
	t.Fatalf("no record %s", key)
	return ""
}

func failures(t testing.TB, event events.SQSEvent, keys ...string) string {
	items := make([]events.SQSBatchItemFailure, 0, len(keys))
	for _, key := range keys {
		items = append(items, events.SQSBatchItemFailure{ItemIdentifier: fifoID(t, event, key)})
	}
	encoded, _ := json.Marshal(events.SQSEventResponse{BatchItemFailures: items})
	return string(encoded)
}

// TestFIFO is C04: the batch a1(g1) b1(g2) a2(g1) c1(g3) b2(g2) a3(g1), where a2 fails
// on its first attempt only.
func TestFIFO(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		options        []lambda.Option
		wantFailures   []string
		wantByGroup    map[string][]string
		wantAll        []string // checked only when the batch runs one record at a time
		wantVisibility map[string]int32
	}{
		{
			name:         "skip failed group (default)",
			wantFailures: []string{"a2", "a3"},
			wantByGroup: map[string][]string{
				"g1": {"a1", "a2(fail)"},
				"g2": {"b1", "b2"},
				"g3": {"c1"},
			},
			wantVisibility: map[string]int32{"a2": 2, "a3": 0},
		},
		{
			name:           "skip failed group, one group at a time",
			options:        []lambda.Option{lambda.WithConcurrency(1)},
			wantFailures:   []string{"a2", "a3"},
			wantAll:        []string{"a1", "a2(fail)", "b1", "b2", "c1"},
			wantVisibility: map[string]int32{"a2": 2, "a3": 0},
		},
		{
			name:           "stop at first failure",
			options:        []lambda.Option{lambda.WithFIFOMode(lambda.FIFOStopAtFirstFailure)},
			wantFailures:   []string{"a2", "c1", "b2", "a3"},
			wantAll:        []string{"a1", "b1", "a2(fail)"},
			wantVisibility: map[string]int32{"a2": 2, "c1": 0, "b2": 0, "a3": 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			payload, event := fixture(t, "fifo_event.json")
			var log fifoLog
			fake := &recordingSQS{}
			options := append([]lambda.Option{lambda.WithSQSClient(fake), noJitter}, tc.options...)
			fn := batchFunc(t, fifoHandler(&log), options...)
			got, err := invoke(context.Background(), fn, payload)
			if err != nil {
				t.Fatal(err)
			}
			if want := failures(t, event, tc.wantFailures...); got != want {
				t.Errorf("response\n got %s\nwant %s", got, want)
			}
			if tc.wantByGroup != nil {
				assert.Equal(t, tc.wantByGroup, log.byGroup, "handler calls per group")
			}
			if tc.wantAll != nil {
				assert.Equal(t, tc.wantAll, log.all, "handler calls")
			}
			wantVisibility := map[string]int32{}
			for key, seconds := range tc.wantVisibility {
				wantVisibility[receipt(t, event, fifoID(t, event, key))] = seconds
			}
			assert.Equal(t, wantVisibility, fake.visibilityByReceipt(), "visibility timeouts")
		})
	}
}

// TestFIFOSecondInvocation continues C04: the redelivered a2 and a3 arrive in one batch
// and are handled in order, so g1's call log is exactly a1, a2(fail), a2, a3.
func TestFIFOSecondInvocation(t *testing.T) {
	t.Parallel()
	payload, event := fixture(t, "fifo_event.json")
	var log fifoLog
	fn := batchFunc(t, fifoHandler(&log), lambda.WithSQSClient(&recordingSQS{}))
	if _, err := invoke(context.Background(), fn, payload); err != nil {
		t.Fatal(err)
	}
	second := events.SQSEvent{}
	for _, record := range event.Records {
		if id := record.MessageId; id == fifoID(t, event, "a2") || id == fifoID(t, event, "a3") {
			record.Attributes["ApproximateReceiveCount"] = "2"
			second.Records = append(second.Records, record)
		}
	}
	payload, _ = json.Marshal(second)
	got, err := invoke(context.Background(), fn, payload)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"batchItemFailures":[]}`; got != want {
		t.Errorf("second response %s, want %s", got, want)
	}
	assert.Equal(t, []string{"a1", "a2(fail)", "a2", "a3"}, log.byGroup["g1"], "g1 handler calls")
}
