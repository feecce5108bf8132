package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/redrive"
)

// TestPeekTextOnASourceQueue: peeking a source queue (--force) must not say a message
// without failure-reason was "moved by the redrive policy": it is still in its queue.
func TestPeekTextOnASourceQueue(t *testing.T) {
	t.Parallel()
	now := time.Now()
	letter := redrive.DeadLetter{ID: "m-1", SentAt: now, ExpiresAt: now.Add(time.Hour), ExpiryExact: true, ExpiryBasis: redrive.ExpiryBasisOriginalEnqueue}
	var out bytes.Buffer
	a := newApp(&out, &out)
	a.printDeadLetters(&redrive.PeekResult{QueueURL: "http://x/q", RedrivePolicy: &redrive.RedrivePolicy{MaxReceiveCount: 5, DeadLetterTargetARN: "arn:aws:sqs:r:1:q-dlq"}, Messages: []redrive.DeadLetter{letter}}, now)
	if text := out.String(); strings.Contains(text, "moved by the redrive policy") || !strings.Contains(text, "failure reason:  (none: not dead-lettered; this is not a dead-letter queue)") {
		t.Errorf("peek of a source queue:\n%s", text)
	}
	out.Reset()
	a.printDeadLetters(&redrive.PeekResult{QueueURL: "http://x/q-dlq", Messages: []redrive.DeadLetter{letter}}, now)
	if text := out.String(); !strings.Contains(text, "moved by the redrive policy") {
		t.Errorf("peek of a dead-letter queue should say the redrive policy moved it:\n%s", text)
	}
}

// TestPeekTextNamesTheExpiryBasis: the expiry line says what it counts from.
func TestPeekTextNamesTheExpiryBasis(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, letter := range []redrive.DeadLetter{
		{ID: "a", SentAt: now, ExpiresAt: now.Add(time.Hour), ExpiryExact: true, ExpiryBasis: redrive.ExpiryBasisOriginalEnqueue},
		{ID: "b", SentAt: now, ExpiresAt: now.Add(time.Hour), ExpiryBasis: redrive.ExpiryBasisFIFOMove},
	} {
		var out bytes.Buffer
		newApp(&out, &out).printDeadLetters(&redrive.PeekResult{QueueURL: "http://x/q-dlq", Messages: []redrive.DeadLetter{letter}}, now)
		if !strings.Contains(out.String(), "basis: "+letter.ExpiryBasis) {
			t.Errorf("expiry of %s does not name its basis %q:\n%s", letter.ID, letter.ExpiryBasis, out.String())
		}
	}
}
