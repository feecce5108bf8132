package producer

import (
	"context"
	"encoding/hex"
	"log/slog"
	"strings"

	"github.com/sqsworker/sqsworker"
)

// AttributeUniqueRelease is the message attribute that tells [UniqueMiddleware] to free
// the job's unique key: "until-done:" or "until-started:", the reservation's owner token
// (32 hex digits), ":" and the key. The producer sets it for [UniqueUntilDone] and
// [UniqueUntilStarted] only.
const AttributeUniqueRelease = "unique-release"

func releaseValue(mode UniqueMode, owner, key string) string {
	return mode.String() + ":" + owner + ":" + key
}

// uniqueRelease is a parsed AttributeUniqueRelease.
type uniqueRelease struct {
	mode       UniqueMode
	owner, key string
}

// parseRelease reads message's AttributeUniqueRelease; ok is false without one, and a
// value that is not one the producer writes is an error.
func parseRelease(message *sqsworker.Message) (release uniqueRelease, ok bool, valid bool) {
	attribute, present := message.MessageAttributes[AttributeUniqueRelease]
	if !present {
		return uniqueRelease{}, false, true
	}
	mode, rest, _ := strings.Cut(attribute.StringValue, ":")
	owner, key, found := strings.Cut(rest, ":")
	switch mode {
	case UniqueUntilDone.String():
		release.mode = UniqueUntilDone
	case UniqueUntilStarted.String():
		release.mode = UniqueUntilStarted
	default:
		return uniqueRelease{}, true, false
	}
	if decoded, err := hex.DecodeString(owner); !found || err != nil || len(decoded) != 16 || key == "" {
		return uniqueRelease{}, true, false
	}
	release.owner, release.key = owner, key
	return release, true, true
}

// UniqueMiddleware is the consumer side of [UniqueUntilDone] and [UniqueUntilStarted]:
// for a message carrying [AttributeUniqueRelease] it frees the job's unique key in store
// (Store.Free, conditioned on the owner token the producer sent, so a message can free
// only the key its own Send reserved: a sender who names another key without its
// token frees nothing) when the handler succeeds or fails permanently (the runtime
// dead-letters it), for UniqueUntilDone, or just before the handler runs, for
// UniqueUntilStarted. Messages without the attribute (jobs that are not unique, or are
// [UniqueUntilWindowEnds]) pass through with no store call: a redriven or redelivered
// message is never refused as a duplicate of itself, since uniqueness is checked only
// when a job is sent (duplicate deliveries are the idempotency middleware's job).
//
// A failure to free is logged (logger; slog.Default() if nil) and does not change the
// message's outcome: the key is then free when its window ends. A malformed attribute
// is logged and ignored. Put it after sqsworker.DelayMiddleware in the chain (inside it),
// so a hop does not count as the job's start.
func UniqueMiddleware(store UniqueStore, logger *slog.Logger) sqsworker.Middleware {
	if store == nil {
		panic("producer: UniqueMiddleware with a nil store")
	}
	if logger == nil {
		logger = slog.Default()
	}
	return func(next sqsworker.Handler) sqsworker.Handler {
		return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
			release, ok, valid := parseRelease(message)
			switch {
			case !ok:
				return next.Handle(ctx, message)
			case !valid:
				logger.WarnContext(ctx, "producer: ignoring a malformed unique-release attribute", "message_id", message.ID, "queue", message.QueueURL)
				return next.Handle(ctx, message)
			case release.mode == UniqueUntilStarted:
				free(ctx, store, release, message, logger)
				return next.Handle(ctx, message)
			}
			err := next.Handle(ctx, message)
			if err == nil || sqsworker.Classify(err).Kind == sqsworker.OutcomeDeadLetter {
				free(ctx, store, release, message, logger)
			}
			return err
		})
	}
}

func free(ctx context.Context, store UniqueStore, release uniqueRelease, message *sqsworker.Message, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := store.Free(ctx, release.key, release.owner); err != nil {
		logger.WarnContext(ctx, "producer: freeing the unique key failed; it stays taken until its window ends",
			"message_id", message.ID, "unique_key", release.key, "mode", release.mode.String(), "error", err)
	}
}
