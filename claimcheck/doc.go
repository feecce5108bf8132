// Package claimcheck sends message bodies too large for SQS through S3 (the claim-check
// pattern), in the format of the AWS extended client libraries, so that Java and Python
// producers and consumers of those libraries interoperate with sqsworker's:
//
//   - the producer side, [Store], is the producer's PayloadStore: above the producer's
//     offload threshold (by default the queue's MaximumMessageSize) it writes the body to
//     S3 and sends a pointer instead;
//   - the consumer side, [Resolver], resolves pointers before the handler, on both
//     hosts (its Middleware is an [sqsworker.Middleware]), and only those inside the
//     locations it is told to allow;
//   - [Cleaner], told by the resolver which deliveries it resolved and by the host (as
//     an [sqsworker.Observer]) how each was settled, deletes a payload only after its
//     message was deleted from the queue following a successful handling.
//
// # Wire format
//
// A message whose payload is in S3 carries a size attribute (data type Number, the
// payload's size in bytes) and has as body the JSON array
//
//	["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"BUCKET","s3Key":"KEY"}]
//
// The store writes the attribute ExtendedPayloadSize and that body, without spaces. What
// the other clients write (testdata/wire holds their captured bytes):
//
//   - amazon-sqs-java-extended-client-lib 2.1.1 writes SQSLargePayloadSize by default,
//     and ExtendedPayloadSize only with withLegacyReservedAttributeNameDisabled(); its
//     body is the array above, without spaces (payload-offloading-java-common-lib's
//     PayloadS3Pointer through Jackson's default typing). On receive it accepts both
//     attribute names and both class names (it rewrites the legacy class name
//     com.amazon.sqs.javamessaging.MessageS3Pointer before parsing), so it reads the
//     store's messages;
//   - amazon-sqs-extended-client for Python 1.0.1 writes ExtendedPayloadSize, or
//     SQSLargePayloadSize and the legacy class name with use_legacy_attribute, and a
//     space after each "," and ":" (json.dumps);
//   - the Node.js sqs-extended-client, in the Java-compatible mode proposed in its pull
//     request 22, writes ExtendedPayloadSize and the bare object
//     {"s3BucketName": ..., "s3Key": ...}.
//
// The resolver reads all of them: both attribute names, both class names, any JSON
// spacing, and the bare object; any other shape is a permanent failure
// ([ReasonPayloadPointerInvalid]). As in those libraries, the attribute marks the
// message (a body that looks like a pointer without it is an ordinary body), the handler
// sees the payload without the claim-check attributes, and a pointer message uses one of
// SQS's 10 message attributes (two when shared).
//
// # Trust
//
// Whoever may send to the queue is not trusted with the worker's S3 role: a message
// could name any object the role can read, and the cleaner would delete it after the
// handler succeeds. So the resolver reads only pointers inside ResolverConfig.Allow (a
// bucket and a key prefix; [Store.Location] gives the store's), and refuses a key that
// is not a plain S3 key (characters outside S3's safe set, "." or ".." segments,
// percent-encoding, empty segments) before comparing prefixes. A refused pointer is a
// permanent failure ([ReasonPayloadNotAllowed]): the message goes to the dead-letter
// queue after one receive, and the object is never read nor deleted. With no Allow,
// every pointer is refused. Scope the role the same way (see Permissions): the
// allow-list is the worker's own check, the policy is AWS's.
//
// # Memory
//
// A payload is held in memory as the message body. The resolver refuses, before reading
// anything, a message announcing more than ResolverConfig.MaxPayloadSize (16 MiB by
// default) and an object whose Content-Length is above it or differs from the announced
// size ([ReasonPayloadTooLarge], [ReasonPayloadSizeMismatch]); it never reads more than
// the announced size; and concurrent deliveries share one byte budget
// (ResolverConfig.MaxBufferedBytes, 64 MiB by default), held until the handler returns,
// so a delivery whose payload does not fit waits. Ten concurrent 64 MiB payloads peaked
// at 130 MiB of heap (603 MiB without the budget); see BenchmarkTenConcurrentPayloadsOnEmulator.
//
// # Lifecycle of a payload
//
// The payload lives until the message is done with:
//
//   - handled successfully and deleted: the poller reports EventDeleted once SQS
//     confirmed the DeleteMessageBatch entry, and the Cleaner deletes the object then,
//     if the resolver handed this delivery's payload to the handler (a delayed job
//     re-sent as a hop still points to the object, and so does the copy of a duplicate
//     the idempotency middleware suppressed). A delete entry that failed
//     (co-go/sqs-extended-client-go#150 deleted the object anyway) is never followed by
//     an object delete: the message comes back and must resolve;
//   - shared by several consumers (an SNS topic fanning out to several queues): a store
//     whose destination is a topic ARN, or with Config.Shared, marks the pointer with
//     AttributePayloadShared, and no consumer's Cleaner deletes it;
//   - dead-lettered: the dead-letter send copies the pointer body and its attributes
//     (the resolver hands the handler a resolved copy and leaves the host's message as
//     received), so the dead-letter queue's message, and the message after a redrive,
//     still resolve; the object is kept until the redriven message succeeds;
//   - on Lambda, the event source mapping deletes the records after the function
//     returns, unseen by the function, so the Cleaner ignores the Lambda host.
//
// Objects the cleaner does not delete (Lambda, shared pointers, a failed or dropped
// DeleteObject, a send that failed after the upload, a purged queue) are removed by a
// lifecycle rule that expires KeyPrefix later than any message can live: the source
// queue's retention plus the dead-letter queue's (at most 14 days each), plus the time an
// operator may take to redrive; a redrive that sends the message anew (the redrive
// package's mover) starts its retention again. The Terraform module
// infra/terraform/modules/payload-bucket refuses an expiration that is not longer than
// the two retentions.
//
// # Failures
//
// Permanent, so the message goes to the dead-letter queue after one receive with the
// reason, and the handler never runs: a pointer of an unknown shape
// ([ReasonPayloadPointerInvalid]), outside Allow ([ReasonPayloadNotAllowed]), too large
// ([ReasonPayloadTooLarge]), of a size other than announced
// ([ReasonPayloadSizeMismatch]), and a missing object or bucket
// ([ReasonPayloadNotFound]): S3 is strongly consistent, so a missing object was deleted
// and no retry brings it back. With ResolverConfig.DiscardOrphaned a missing object
// (NoSuchKey, not NoSuchBucket) deletes the message unhandled instead, logged and
// counted. Any other S3 error is retried with backoff, bounded by the redrive policy,
// and never discarded: AccessDenied among them, since S3 answers AccessDenied, not
// NoSuchKey, for a missing key when the role lacks s3:ListBucket, and a policy may be
// fixed.
//
// # Duplicates
//
// On a standard queue SQS may deliver a message twice, and a producer may send one job
// twice (a retried send): the sends of a job with an idempotency key
// ([sqsworker.AttributeIdempotencyKey]) carry the same pointer to one object (see
// [Store.Offload]). Once one copy is handled and the object deleted, another copy that
// reaches the resolver fails with ReasonPayloadNotFound. Put the idempotency
// middleware, keyed by that attribute (its default), outside the resolver's: it then
// suppresses such a copy before its payload is read, and its payload hash (of the
// pointer body) matches across the copies.
//
// # Wiring
//
//	store, _ := claimcheck.NewStore(s3Client, claimcheck.Config{Bucket: "my-payloads", KeyPrefix: "jobs/"})
//	jobs, _ := producer.New(sqsClient, producer.Config{PayloadStore: store})
//
//	cleaner := claimcheck.NewCleaner(s3Client, claimcheck.CleanerConfig{})
//	resolver, _ := claimcheck.NewResolver(s3Client, claimcheck.ResolverConfig{Allow: []claimcheck.Location{store.Location()}, Cleaner: cleaner})
//	handler = sqsworker.Chain(handler, resolver.Middleware())
//	server, _ := poller.New(sqsClient, poller.Config{QueueURL: url, Observer: cleaner}, handler)
//	// after server.Shutdown: cleaner.Shutdown(ctx)
//
// With other observers, combine them: sqsworker.Observers(metrics, cleaner). On Lambda
// the resolver alone is enough (lambda.WithObserver(cleaner) is harmless: it deletes
// nothing there).
//
// # Permissions
//
// Scope every grant to the payload prefix, arn:aws:s3:::BUCKET/PREFIX*. Producer:
// s3:PutObject. Consumer: s3:GetObject, s3:DeleteObject (with a Cleaner), and
// s3:ListBucket on arn:aws:s3:::BUCKET with the condition s3:prefix = PREFIX* (so that a
// missing object is NoSuchKey). With SSE-KMS, kms:GenerateDataKey (producer) and
// kms:Decrypt (consumer) on the key. The payload-bucket Terraform module outputs both
// policies.
//
// # FIFO queues
//
// Without an idempotency key every Offload writes a new key, so content-based
// deduplication sees a different body for each send of the same payload: give
// offloaded FIFO messages an idempotency key or an explicit deduplication id.
package claimcheck
