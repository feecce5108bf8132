package testenv

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// WaitQueueEmpty waits up to timeout until SQS counts no message in url: none visible, in
// flight or delayed. A caller that must see a message whose receive response was lost
// come back gives it more than the queue's visibility timeout.
func WaitQueueEmpty(t testing.TB, client *sqs.Client, url string, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, "queue "+url+" empty", func() bool {
		attributes := QueueAttributes(t, client, url)
		return attributes["ApproximateNumberOfMessages"] == "0" && attributes["ApproximateNumberOfMessagesNotVisible"] == "0" &&
			attributes["ApproximateNumberOfMessagesDelayed"] == "0"
	})
}
