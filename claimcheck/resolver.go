package claimcheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/sqsworker/sqsworker"
)

// Failure reasons the resolver gives to [sqsworker.Permanent]; they become the
// failure-reason attribute of the dead-lettered message.
const (
	// ReasonPayloadPointerInvalid: the message carries AttributePayloadSize (or the legacy
	// name) but its body is not a pointer of a known shape, or the size is not a byte
	// count. Retrying cannot fix the body.
	ReasonPayloadPointerInvalid = "ClaimCheckPayloadPointerInvalid"
	// ReasonPayloadNotAllowed: the pointer names an object outside ResolverConfig.Allow
	// (another bucket, a key outside the prefix, a key that is not a plain S3 key), or
	// no location is allowed. The object is neither read nor deleted.
	ReasonPayloadNotAllowed = "ClaimCheckPayloadNotAllowed"
	// ReasonPayloadNotFound: S3 answered NoSuchKey or NoSuchBucket for the pointer. S3
	// is strongly consistent (a written object is readable at once), so a missing
	// object was deleted (by a lifecycle rule, by hand, or after a duplicate delivery of
	// the same message was handled) and will not come back on retry.
	ReasonPayloadNotFound = "ClaimCheckPayloadNotFound"
	// ReasonPayloadTooLarge: the size the message announces, or the object's
	// Content-Length, is above ResolverConfig.MaxPayloadSize. Nothing is read.
	ReasonPayloadTooLarge = "ClaimCheckPayloadTooLarge"
	// ReasonPayloadSizeMismatch: the object is not the size the message announces (its
	// Content-Length differs, or its body holds more or fewer bytes). Nothing beyond
	// the announced size is read.
	ReasonPayloadSizeMismatch = "ClaimCheckPayloadSizeMismatch"
)

// Defaults of [ResolverConfig].
const (
	// DefaultMaxPayloadSize is ResolverConfig.MaxPayloadSize when zero: 16 MiB.
	DefaultMaxPayloadSize = 16 << 20
	// DefaultMaxBufferedBytes is ResolverConfig.MaxBufferedBytes when zero: 64 MiB.
	DefaultMaxBufferedBytes = 64 << 20
)

// ResolverConfig configures a [Resolver].
type ResolverConfig struct {
	// Allow lists where payloads may be. A pointer to any other bucket or key is
	// refused as a permanent failure ([ReasonPayloadNotAllowed]): its object is never
	// read and never deleted, since whoever may send to the queue is not trusted with
	// the worker's S3 role. Put the producer's location here ([Store.Location], or the
	// other library's bucket and prefix).
	//
	// Empty allows nothing: every pointer is refused (and ordinary messages pass). That
	// is the safe default: a worker that was never told where payloads live has no
	// business reading or deleting any object a message names.
	Allow []Location

	// MaxPayloadSize bounds one payload, in bytes: the whole payload is held in memory
	// as the message body. A message announcing more, or whose object's Content-Length
	// is more, fails with ReasonPayloadTooLarge before anything is read. If zero,
	// DefaultMaxPayloadSize (16 MiB). At most MaxBufferedBytes. (The extended client
	// libraries allow payloads up to 2 GB; raise it for such producers, with the memory
	// to match.)
	MaxPayloadSize int64

	// MaxBufferedBytes bounds the payload bytes held at once by the deliveries this
	// resolver serves, from the start of a read until the handler returns: a delivery
	// whose announced size does not fit waits (bounded by its context) until others
	// finish. If zero, DefaultMaxBufferedBytes (64 MiB). Use one Resolver for every
	// queue of a process, so they share the bound.
	MaxBufferedBytes int64

	// DiscardOrphaned, if true, deletes a message whose payload object is gone
	// (NoSuchKey) without running the handler, instead of dead-lettering it with
	// ReasonPayloadNotFound: for consumers that see such copies routinely (duplicates
	// of handled messages without an idempotency middleware). Each discard is logged
	// and counted (ResolverStats.Orphaned). A missing bucket (NoSuchBucket) and every
	// other S3 error, AccessDenied among them, are never discarded.
	DiscardOrphaned bool

	// Cleaner, if set, is told of every delivery whose payload was handed to the
	// handler, so it can delete the payload once the host reports the message deleted
	// after success. Without it no payload is deleted (a lifecycle rule expires them).
	// It deletes only pointers this resolver accepted, so only inside Allow.
	Cleaner *Cleaner

	// Logger receives one warning per discarded orphan; if nil, logs are discarded.
	Logger *slog.Logger
}

// ResolverStats counts what a [Resolver] did since it was made.
type ResolverStats struct {
	// Resolved is the number of payloads read and handed to the handler.
	Resolved int64
	// Refused is the number of pointer messages failed permanently without a read: not
	// allowed, malformed, too large or of a mismatching size.
	Refused int64
	// NotFound is the number of pointers whose object or bucket was missing.
	NotFound int64
	// Orphaned is the number of those messages deleted unhandled (DiscardOrphaned).
	Orphaned int64
	// Waiting is the number of deliveries waiting for MaxBufferedBytes now.
	Waiting int64
	// Buffered is the payload bytes held now (at most MaxBufferedBytes).
	Buffered int64
}

// Resolver is the consumer side of the claim check: its [Resolver.Middleware] resolves
// S3 pointers before the handler runs, on either host. It is safe for concurrent use.
type Resolver struct {
	client S3API
	config ResolverConfig
	logger *slog.Logger
	budget *semaphore.Weighted

	resolved, refused, notFound, orphaned, waiting, buffered atomic.Int64
}

// NewResolver returns a resolver reading payloads with client (s3:GetObject on the
// allowed locations).
//
// Errors: nil client, an Allow entry with an empty bucket or a prefix that is not a
// plain S3 key prefix, a negative size, or MaxPayloadSize above MaxBufferedBytes.
func NewResolver(client S3API, config ResolverConfig) (*Resolver, error) {
	var problems []error
	if client == nil {
		problems = append(problems, errors.New("claimcheck: NewResolver: nil S3 client"))
	}
	for i, location := range config.Allow {
		if err := location.validate(); err != nil {
			problems = append(problems, fmt.Errorf("claimcheck: ResolverConfig.Allow[%d]: %w", i, err))
		}
	}
	if config.MaxPayloadSize < 0 || config.MaxBufferedBytes < 0 {
		problems = append(problems, fmt.Errorf("claimcheck: ResolverConfig.MaxPayloadSize (%d) and MaxBufferedBytes (%d) must not be negative", config.MaxPayloadSize, config.MaxBufferedBytes))
	}
	if config.MaxBufferedBytes == 0 {
		config.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if config.MaxPayloadSize == 0 {
		config.MaxPayloadSize = min(DefaultMaxPayloadSize, config.MaxBufferedBytes)
	}
	if config.MaxPayloadSize > config.MaxBufferedBytes {
		problems = append(problems, fmt.Errorf("claimcheck: ResolverConfig.MaxPayloadSize (%d) is above MaxBufferedBytes (%d): such a payload could never be read", config.MaxPayloadSize, config.MaxBufferedBytes))
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	logger := config.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	config.Allow = append([]Location(nil), config.Allow...)
	return &Resolver{client: client, config: config, logger: logger, budget: semaphore.NewWeighted(config.MaxBufferedBytes)}, nil
}

// Middleware returns the middleware that resolves pointers: for a message that carries
// AttributePayloadSize (or LegacyAttributePayloadSize) it checks the pointer against
// ResolverConfig.Allow and the announced size against MaxPayloadSize, waits for its
// share of MaxBufferedBytes, reads the payload (GetObject, refusing a Content-Length
// other than the announced size and reading at most that many bytes), and hands the
// handler the message with the payload as Body and without the claim-check attributes,
// as the extended client libraries do. Other messages pass through unchanged.
//
// The handler gets a copy of the message; the host's message is left as received, so
// what the host does next keeps the pointer: a dead-letter send copies the pointer body
// and its attributes, and the dead-lettered (or redriven) message still resolves. The
// middleware never deletes the object; a [Cleaner] does, after the host confirmed the
// message's delete (set ResolverConfig.Cleaner).
//
// Failures: a pointer of an unknown shape ([ReasonPayloadPointerInvalid]), outside
// Allow ([ReasonPayloadNotAllowed]), too large ([ReasonPayloadTooLarge]), of the wrong
// size ([ReasonPayloadSizeMismatch]), or whose object or bucket is missing
// ([ReasonPayloadNotFound], unless DiscardOrphaned) is a permanent failure, so the
// message goes to the dead-letter queue after one receive with the reason; any other S3
// error (throttling, network, AccessDenied, which may be a policy being fixed) is an
// ordinary error, retried with backoff and bounded by the redrive policy.
//
// Order: put it inside middlewares that need only the pointer message, such as the
// idempotency middleware keyed by a message attribute, so a duplicate of a handled
// message is suppressed before its (possibly deleted) payload is read.
func (r *Resolver) Middleware() sqsworker.Middleware {
	return func(next sqsworker.Handler) sqsworker.Handler {
		return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
			pointer, size, ok, err := PointerOf(message)
			if !ok {
				return next.Handle(ctx, message)
			}
			if err != nil {
				return r.refuse(sqsworker.Permanent(ReasonPayloadPointerInvalid, err))
			}
			if err := r.check(pointer, size); err != nil {
				return r.refuse(err)
			}
			if err := r.acquire(ctx, size); err != nil {
				return fmt.Errorf("claimcheck: waiting for %d bytes of the payload budget for %s: %w", size, pointer, err)
			}
			defer r.release(size)
			payload, err := fetch(ctx, r.client, pointer, size, r.config.MaxPayloadSize)
			if err != nil {
				return r.failed(ctx, message, pointer, err)
			}
			r.resolved.Add(1)
			// The handler gets a copy; the host's message keeps the pointer, and is
			// never written while other goroutines (heartbeats, observers) may read it.
			resolved := *message
			resolved.Body = payload
			resolved.MessageAttributes = maps.Clone(message.MessageAttributes)
			delete(resolved.MessageAttributes, AttributePayloadSize)
			delete(resolved.MessageAttributes, LegacyAttributePayloadSize)
			delete(resolved.MessageAttributes, AttributePayloadShared)
			if r.config.Cleaner != nil {
				r.config.Cleaner.track(ctx, message, pointer)
			}
			return next.Handle(ctx, &resolved)
		})
	}
}

// check refuses a pointer outside Allow, or announcing more than MaxPayloadSize, before
// any S3 call.
func (r *Resolver) check(pointer Pointer, size int64) error {
	if len(r.config.Allow) == 0 {
		return sqsworker.Permanent(ReasonPayloadNotAllowed, fmt.Errorf("claimcheck: payload %s refused: no payload location is allowed (ResolverConfig.Allow is empty)", pointer))
	}
	if err := checkKey(pointer.Key); err != nil {
		return sqsworker.Permanent(ReasonPayloadNotAllowed, fmt.Errorf("claimcheck: payload %s refused: %w", pointer, err))
	}
	allowed := false
	for _, location := range r.config.Allow {
		allowed = allowed || location.contains(pointer)
	}
	if !allowed {
		return sqsworker.Permanent(ReasonPayloadNotAllowed, fmt.Errorf("claimcheck: payload %s refused: outside the allowed locations %v", pointer, r.config.Allow))
	}
	if size > r.config.MaxPayloadSize {
		return sqsworker.Permanent(ReasonPayloadTooLarge, fmt.Errorf("claimcheck: payload %s announces %d bytes, above the limit of %d (ResolverConfig.MaxPayloadSize)", pointer, size, r.config.MaxPayloadSize))
	}
	return nil
}

func (r *Resolver) refuse(err error) error {
	r.refused.Add(1)
	return err
}

// acquire waits for size bytes of the budget.
func (r *Resolver) acquire(ctx context.Context, size int64) error {
	if !r.budget.TryAcquire(size) {
		r.waiting.Add(1)
		err := r.budget.Acquire(ctx, size)
		r.waiting.Add(-1)
		if err != nil {
			return err
		}
	}
	r.buffered.Add(size)
	return nil
}

func (r *Resolver) release(size int64) {
	r.buffered.Add(-size)
	r.budget.Release(size)
}

// failed counts a failed fetch and, for a missing object with DiscardOrphaned, turns
// it into a success that skips the handler.
func (r *Resolver) failed(ctx context.Context, message *sqsworker.Message, pointer Pointer, err error) error {
	var missing *missingError
	if !errors.As(err, &missing) {
		if sqsworker.Classify(err).Kind == sqsworker.OutcomeDeadLetter {
			r.refused.Add(1)
		}
		return err
	}
	r.notFound.Add(1)
	if !r.config.DiscardOrphaned || !missing.key {
		return sqsworker.Permanent(ReasonPayloadNotFound, err)
	}
	r.orphaned.Add(1)
	r.logger.LogAttrs(ctx, slog.LevelWarn, "claimcheck: payload not found; message deleted unhandled (DiscardOrphaned)",
		slog.String("message_id", message.ID), slog.String("payload", pointer.String()), slog.Any("error", err))
	return nil
}

// Stats returns what the resolver did so far.
func (r *Resolver) Stats() ResolverStats {
	return ResolverStats{
		Resolved: r.resolved.Load(), Refused: r.refused.Load(), NotFound: r.notFound.Load(),
		Orphaned: r.orphaned.Load(), Waiting: r.waiting.Load(), Buffered: r.buffered.Load(),
	}
}
