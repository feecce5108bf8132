// Package claimcheck sends message bodies too large for SQS through S3 (the claim-check
// pattern), in the format of the AWS extended client libraries, so that Java and Python
// producers and consumers of those libraries interoperate with sqsworker's:
//
//   - the producer side, [Store], is the producer's PayloadStore: above the producer's
//     offload threshold (by default the queue's MaximumMessageSize) it writes the body to
//     S3 and sends a pointer instead;
//   - the consumer side, [Middleware], resolves pointers before the handler, on both
//     hosts (it is an [sqsworker.Middleware]);
//   - [Cleaner], told by the middleware which deliveries it resolved and by the host (as
//     an [sqsworker.Observer]) how each was settled, deletes a payload only after its
//     message was deleted from the queue following a successful handling.
//
// # Wire format
//
// A message whose payload is in S3 carries the message attribute ExtendedPayloadSize
// (data type Number, the payload's size in bytes) and has as body
//
//	["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"BUCKET","s3Key":"KEY"}]
//
// as written by amazon-sqs-java-extended-client-lib 2.x (through
// payload-offloading-java-common-lib's PayloadS3Pointer, serialised by Jackson with
// default typing) and by amazon-sqs-extended-client for Python. Reading, the package
// also accepts the legacy attribute SQSLargePayloadSize and the legacy class name
// com.amazon.sqs.javamessaging.MessageS3Pointer (Java 1.x, Python's
// use_legacy_attribute). As in those libraries, the attribute marks the message (a body
// that looks like a pointer without it is an ordinary body), the handler sees the
// payload without the attribute, and a pointer message uses one of SQS's 10 message
// attributes.
//
// # Lifecycle of a payload
//
// The payload lives until the message is done with:
//
//   - handled successfully and deleted: the poller reports EventDeleted once SQS
//     confirmed the DeleteMessageBatch entry, and the Cleaner deletes the object then,
//     if the middleware handed this delivery's payload to the handler (a delayed job
//     re-sent as a hop still points to the object, and so does the copy of a duplicate
//     the idempotency middleware suppressed). A
//     delete entry that failed (co-go/sqs-extended-client-go#150 deleted the object
//     anyway) is never followed by an object delete: the message comes back and must
//     resolve;
//   - dead-lettered: the dead-letter send copies the pointer body and its attribute (the
//     middleware hands the handler a resolved copy and leaves the host's message as
//     received), so the dead-letter queue's message,
//     and the message after a redrive, still resolve; the object is kept;
//   - on Lambda, the event source mapping deletes the records after the function
//     returns, unseen by the function, so the Cleaner ignores the Lambda host.
//
// Objects the cleaner does not delete (Lambda, a failed or dropped DeleteObject, a send
// that failed after the upload, a purged queue) are orphans: give the bucket a lifecycle
// rule that expires KeyPrefix later than any message can live: the source queue's
// retention plus the dead-letter queue's (at most 14 days each), plus the time an
// operator may take to redrive; a redrive that sends the message anew (the redrive
// package's mover) starts its retention again.
//
// # Failures
//
// A pointer whose object or bucket is missing, a malformed pointer and a payload above
// MiddlewareConfig.MaxPayloadSize are permanent failures (reasons [ReasonPayloadNotFound],
// [ReasonMalformedPointer], [ReasonPayloadTooLarge]): the message goes to the dead-letter
// queue after one receive. S3 is strongly consistent, so a missing object was deleted
// and no retry brings it back. Any other S3 error is retried with backoff, bounded by
// the redrive policy: AccessDenied among them, since S3 answers AccessDenied, not
// NoSuchKey, for a missing key when the role lacks s3:ListBucket, and a policy may be
// fixed.
//
// # Duplicates
//
// On a standard queue SQS may deliver a message twice, and a producer may send one job
// twice (a retried send): the sends of a job with an idempotency key
// ([sqsworker.AttributeIdempotencyKey]) carry the same pointer to one object (see
// [Store.Offload]). Once one copy is handled and the object deleted, another copy that
// reaches this middleware fails with ReasonPayloadNotFound. Put the idempotency
// middleware, keyed by that attribute (its default), outside this middleware: it then
// suppresses such a copy before its payload is read, and its payload hash (of the
// pointer body) matches across the copies.
//
// # Wiring
//
//	store, _ := claimcheck.NewStore(s3Client, claimcheck.Config{Bucket: "my-payloads"})
//	jobs, _ := producer.New(sqsClient, producer.Config{PayloadStore: store})
//
//	cleaner := claimcheck.NewCleaner(s3Client, claimcheck.CleanerConfig{})
//	handler = sqsworker.Chain(handler, claimcheck.Middleware(s3Client, claimcheck.MiddlewareConfig{Cleaner: cleaner}))
//	server, _ := poller.New(sqsClient, poller.Config{QueueURL: url, Observer: cleaner}, handler)
//	// after server.Shutdown: cleaner.Shutdown(ctx)
//
// With other observers, combine them: sqsworker.Observers(metrics, cleaner). On Lambda
// the middleware alone is enough (lambda.WithObserver(cleaner) is harmless: it deletes
// nothing there).
//
// # Permissions
//
// Producer: s3:PutObject on the bucket. Consumer: s3:GetObject, s3:ListBucket (for
// NoSuchKey above) and, with a Cleaner, s3:DeleteObject.
//
// # FIFO queues
//
// Without an idempotency key every Offload writes a new key, so content-based
// deduplication sees a different body for each send of the same payload: give
// offloaded FIFO messages an idempotency key or an explicit deduplication id.
package claimcheck
