package sqsworker

// Message attributes a host adds when it sends a message to the dead-letter queue itself:
// for a permanent failure ([Permanent]), and for the failed last attempt of a message
// whose receive count reached the redrive policy's maxReceiveCount
// ([ReasonRetriesExhausted]). The redrive tooling reads them back (its FailureReason
// filter, `sqsworker dlq peek`). When the copy would pass SQS's limits (10 attributes,
// the queue's MaximumMessageSize), the host adds them in the order reason, message id,
// error (shortened), receive count, source queue, each only if it fits.
const (
	// AttributeFailureReason holds the Outcome's Reason, for example "MalformedBody", or
	// ReasonRetriesExhausted.
	AttributeFailureReason = "failure-reason"
	// AttributeFailureMessageID holds the message id the failed message had in its
	// source queue (the copy in the dead-letter queue gets a new one), so the copy joins
	// the logs and traces of its attempts, which carry that id (message_id).
	AttributeFailureMessageID = "failure-message-id"
	// AttributeFailureError holds the handler's error text, at most 1,024 bytes: a longer
	// text is cut at a UTF-8 boundary and ends in "...".
	AttributeFailureError = "failure-error"
	// AttributeFailureSourceQueue holds the ARN (or, if unknown, URL) of the source queue.
	AttributeFailureSourceQueue = "failure-source-queue"
	// AttributeFailureReceiveCount holds the receive count of the failed delivery (Number).
	AttributeFailureReceiveCount = "failure-receive-count"
)

// ReasonRetriesExhausted is the failure reason of a message whose last attempt failed:
// its handler returned an error (or a retry-after or deferral) at a receive count that
// reached the queue's redrive policy maxReceiveCount, so SQS would move it to the
// dead-letter queue at its next receive, without a reason. The hosts send it there
// themselves instead, with this reason and the last attempt's error, and delete it.
// With the dead-letter send disabled, or when the send fails, the redrive policy moves it
// as before.
const ReasonRetriesExhausted = "RetriesExhausted"
