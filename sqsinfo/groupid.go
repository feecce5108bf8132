package sqsinfo

import (
	"errors"
	"fmt"
)

// ErrInvalidMessageGroupID matches the error of [CheckMessageGroupID].
var ErrInvalidMessageGroupID = errors.New("sqsinfo: invalid MessageGroupId")

// CheckMessageGroupID reports whether SQS accepts id as a MessageGroupId: 1 to
// [MaxDeduplicationIDLength] (128) characters, each an ASCII letter, digit or punctuation
// mark (`!"#$%&'()*+,-./:;<=>?@[\]^_{|}~` and the backquote), so no space and nothing
// outside ASCII (API Reference, SendMessage MessageGroupId). The error matches
// [ErrInvalidMessageGroupID].
func CheckMessageGroupID(id string) error {
	if id == "" || len(id) > MaxDeduplicationIDLength {
		return fmt.Errorf("%w: %d bytes, SQS takes 1 to %d", ErrInvalidMessageGroupID, len(id), MaxDeduplicationIDLength)
	}
	for i := range len(id) {
		if c := id[i]; c < '!' || c > '~' {
			return fmt.Errorf("%w: %q has byte %#x at %d; SQS takes ASCII letters, digits and punctuation only", ErrInvalidMessageGroupID, id, c, i)
		}
	}
	return nil
}
