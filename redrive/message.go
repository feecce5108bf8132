package redrive

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// convertMessage turns an SDK message into the neutral sqsworker.Message.
func convertMessage(queueURL string, in types.Message) *sqsworker.Message {
	return sqsx.FromSDK(in, queueURL, "")
}

// maxDeduplicationIDLength is SQS's limit for MessageDeduplicationId (128 characters).
const maxDeduplicationIDLength = sqsinfo.MaxDeduplicationIDLength

// NextDeduplicationID returns the deduplication id a redriven FIFO message is sent
// with: "<orig>-r<n>", where n is one more than the redrive number already at the end of
// orig ("abc" becomes "abc-r1", "abc-r1" becomes "abc-r2"). Sending the message again
// with its old id inside SQS's 5-minute deduplication window would be accepted and then
// silently dropped; the derived id is new, yet the same for every retry of the same
// redrive, so a send repeated after a crash is still deduplicated. An orig too long for
// the suffix is replaced by its SHA-256 (64 hex characters).
func NextDeduplicationID(orig string) string {
	base, n := orig, 0
	if i := strings.LastIndex(orig, "-r"); i > 0 {
		if k, err := strconv.Atoi(orig[i+2:]); err == nil && k > 0 && strconv.Itoa(k) == orig[i+2:] {
			base, n = orig[:i], k
		}
	}
	suffix := "-r" + strconv.Itoa(n+1)
	if len(base)+len(suffix) > maxDeduplicationIDLength {
		sum := sha256.Sum256([]byte(base))
		base = hex.EncodeToString(sum[:])
	}
	return base + suffix
}
