package idempotency

import (
	"context"
	"log/slog"
	"slices"

	"github.com/sqsworker/sqsworker"
)

// messageHandler adds a message's attributes (message_id, queue, receive_count and, once
// known, idempotency_key) to each record it passes on, at the time the record is logged.
// logger.With would format them for every message up front, logged or not: most messages
// log only at debug level, which is usually off.
type messageHandler struct {
	slog.Handler
	message *sqsworker.Message
	key     string // the stored key; "" until computed
	attrs   []slog.Attr
}

// messageLogger returns the logger of one message's decisions.
func messageLogger(logger *slog.Logger, message *sqsworker.Message) (*slog.Logger, *messageHandler) {
	h := &messageHandler{Handler: logger.Handler(), message: message}
	return slog.New(h), h
}

// Handle passes r on with the message's attributes first, then those added with With,
// then r's own.
func (h *messageHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(h.own()...)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return h.Handler.Handle(ctx, out)
}

// own returns the message's attributes and those added with With.
func (h *messageHandler) own() []slog.Attr {
	attrs := make([]slog.Attr, 0, 4+len(h.attrs))
	attrs = append(attrs,
		slog.String("message_id", h.message.ID),
		slog.String("queue", h.message.QueueURL),
		slog.Int("receive_count", h.message.ReceiveCount),
	)
	if h.key != "" {
		attrs = append(attrs, slog.String("idempotency_key", h.key))
	}
	return append(attrs, h.attrs...)
}

// WithAttrs keeps attrs after the message's attributes.
func (h *messageHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	copied := *h
	copied.attrs = append(slices.Clip(h.attrs), attrs...)
	return &copied
}

// WithGroup fixes the attributes so far, then opens the group.
func (h *messageHandler) WithGroup(name string) slog.Handler {
	return h.Handler.WithAttrs(h.own()).WithGroup(name)
}
