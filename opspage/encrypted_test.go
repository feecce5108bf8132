package opspage

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/redrive"
)

// An encrypted dead letter's page says so and names its key; neither its page nor the
// body page shows the ciphertext as if it were the body.
func TestEncryptedDeadLetterIsNeverShownAsItsBody(t *testing.T) {
	t.Parallel()
	s := testServerWith(t, Config{})
	s.refresher.snapshot = Snapshot{Queues: []QueueSnapshot{{Name: "orders", URL: "http://sqs.local/000000000000/orders",
		DLQ: &DLQSnapshot{Name: "orders-dlq", URL: "http://sqs.local/000000000000/orders-dlq"}}}}
	key := "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	s.peeks["orders"] = &peek{At: time.Now(), Result: &redrive.PeekResult{Messages: []redrive.DeadLetter{
		{ID: "m-1", Body: "Q0lQSEVSVEVYVA==", Encrypted: true, EncryptionKey: key},
		{ID: "m-2", Body: "bm90IGJhc2U2NA", Encrypted: true},
	}}}
	for target, want := range map[string]string{
		"/dlq/message?queue=orders&id=m-1": "Encrypted (key " + key + ")",
		"/dlq/body?queue=orders&id=m-1":    "Encrypted (key " + key + ")",
		"/dlq/body?queue=orders&id=m-2":    "Encrypted (key unknown: the envelope is malformed)",
	} {
		r := request(http.MethodGet, target, nil)
		r.Header.Set("Authorization", "Bearer "+s.AccessToken())
		w := serveOnce(s, r)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", target, w.Code, w.Body.String())
		}
		page := w.Body.String()
		if !strings.Contains(page, want) || strings.Contains(page, `id="body"`) || strings.Contains(page, "show-body") {
			t.Errorf("GET %s: want %q and no body:\n%s", target, want, page)
		}
	}
}
