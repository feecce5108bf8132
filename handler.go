package sqsworker

import "context"

// Handler processes one message. Its returned error decides the message's fate; see
// [Classify]. The context carries the per-message deadline and is cancelled when the
// host gives up on the message (hard timeout, drain deadline, Lambda deadline).
type Handler interface {
	Handle(ctx context.Context, message *Message) error
}

// HandlerFunc adapts an ordinary function to a [Handler].
type HandlerFunc func(ctx context.Context, message *Message) error

// Handle calls f(ctx, message).
func (f HandlerFunc) Handle(ctx context.Context, message *Message) error {
	return f(ctx, message)
}

// Middleware wraps a Handler with behaviour of its own (idempotency, logging, ...).
type Middleware func(Handler) Handler

// Chain wraps handler in middlewares; the first middleware given runs outermost.
func Chain(handler Handler, middlewares ...Middleware) Handler {
	for i := len(middlewares) - 1; i >= 0; i-- {
		handler = middlewares[i](handler)
	}
	return handler
}
