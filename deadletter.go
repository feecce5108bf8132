package sqsworker

// Message attributes a host adds when it sends a message to the dead-letter queue for a
// permanent failure ([Permanent]). The redrive tooling reads them back (its FailureReason
// filter, `sqsworker dlq peek`). When the copy would pass SQS's limits (10 attributes,
// the queue's MaximumMessageSize), the host adds them in the order reason, error
// (shortened), receive count, source queue, each only if it fits.
const (
	// AttributeFailureReason holds the Outcome's Reason, for example "MalformedBody".
	AttributeFailureReason = "failure-reason"
	// AttributeFailureError holds the handler's error text, truncated to MaxFailureErrorBytes.
	AttributeFailureError = "failure-error"
	// AttributeFailureSourceQueue holds the ARN (or, if unknown, URL) of the source queue.
	AttributeFailureSourceQueue = "failure-source-queue"
	// AttributeFailureReceiveCount holds the receive count of the failed delivery (Number).
	AttributeFailureReceiveCount = "failure-receive-count"
)

// MaxFailureErrorBytes bounds the failure-error attribute; longer texts are cut at a
// UTF-8 boundary and end in "...".
const MaxFailureErrorBytes = 1024
