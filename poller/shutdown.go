package poller

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Shutdown stops the server gracefully and returns when it has stopped. The order,
// senders before receivers:
//
//  1. The health endpoint answers 503 from now on.
//  2. Receivers: no new ReceiveMessage call starts. The long polls in flight (one per
//     receiver at most, see Config.Receivers) are left to finish (at most WaitTime
//     after each began, so before the default 25 s drain deadline); whatever they
//     return is released at once (visibility 0), never handled. They are not
//     cancelled, even at the drain deadline, because SQS still hands a cancelled long
//     poll its messages (the released ones included), which would then stay invisible
//     for their whole visibility timeout. Only ctx's end cancels them (Run ends ctx 4 s
//     before Config.StopTimeout). So with a DrainTimeout shorter than WaitTime,
//     Shutdown can take up to WaitTime.
//  3. Dispatcher: nothing new starts; messages received but not started (a FIFO
//     group's later messages, those held under Config.Prefetch) are released at once.
//     Running handlers go on until the drain deadline: DrainTimeout
//     after Shutdown began, or ctx's end if sooner. At the deadline their contexts are
//     cancelled (cause [ErrDrainTimeout]), their heartbeats stop, and after a grace of
//     one second for cleanup their messages are released (visibility 0), so another
//     worker gets them within seconds.
//  4. Extender: heartbeats stop (no message is held any more).
//  5. Acker: the final DeleteMessageBatch flush, retrying failed entries (up to 3 s).
//     Deletes are sent as soon as the last handler is done (no DeleteFlushInterval
//     wait), before the long polls in flight end.
//  6. The health endpoint closes.
//
// Shutdown before Start just closes the server; calling it again waits for the first
// call. It returns nil, or (joined) ctx's error when ctx ended the drain before
// DrainTimeout (the shutdown is still completed as above) and an error wrapping
// [ErrDeletesNotConfirmed] that gives the count when the delete of any handled message
// was never confirmed (Stats.DeleteFailures > 0).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	switch s.state {
	case stateNew:
		s.state = stateClosed
		close(s.closed)
		s.mu.Unlock()
		return nil
	case stateStopping, stateClosed:
		s.mu.Unlock()
		select {
		case <-s.closed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.state = stateStopping
	s.mu.Unlock()
	s.logger.Info("poller: draining", "drain_timeout", s.config.DrainTimeout)

	for _, q := range s.queues {
		q.receiver.stop()
	}
	s.dispatcher.stop()
	receiverDone, dispatcherDone := s.receiversDone(), s.dispatcher.wait()
	deadline := time.NewTimer(s.config.DrainTimeout)
	defer deadline.Stop()
	var cutShort error
	// The handlers are aborted once: at the deadline, or at ctx's end if sooner. ctx's
	// end after the deadline (long polls still in flight) only cancels the polls.
	expired, ctxDone := deadline.C, ctx.Done()
	handlersAborted := false
	abortHandlers := func() {
		if !handlersAborted {
			handlersAborted = true
			s.abortHandlers()
		}
	}
	for receiverDone != nil || dispatcherDone != nil {
		select {
		case <-receiverDone:
			receiverDone = nil
		case <-dispatcherDone:
			dispatcherDone = nil
			// Every handler is done: send their deletes now, not after the long polls.
			for _, q := range s.queues {
				q.acker.flushNow()
			}
		case <-expired:
			expired = nil
			abortHandlers()
		case <-ctxDone:
			cutShort = ctx.Err()
			expired, ctxDone = nil, nil
			abortHandlers()
			for _, q := range s.queues {
				q.receiver.abort()
			}
		}
	}
	for _, q := range s.queues {
		q.extender.shutdown()
	}
	for _, q := range s.queues {
		q.acker.shutdown()
	}
	if s.health != nil {
		s.health.shutdown()
	}
	s.wg.Wait()

	s.mu.Lock()
	s.state = stateClosed
	close(s.closed)
	s.mu.Unlock()
	stats := s.Stats()
	s.logger.Info("poller: stopped", "received", stats.Received, "deleted", stats.Deleted,
		"failed", stats.Failed, "released", stats.Released, "delete_failures", stats.DeleteFailures)
	var problems []error
	if cutShort != nil {
		problems = append(problems, fmt.Errorf("poller: shutdown: drain cut short: %w", cutShort))
	}
	if stats.DeleteFailures > 0 {
		problems = append(problems, fmt.Errorf("poller: %d handled message(s) whose delete SQS never confirmed will be delivered again: %w", stats.DeleteFailures, ErrDeletesNotConfirmed))
	}
	return errors.Join(problems...)
}

// receiversDone returns a channel closed when every queue's receive loops have returned.
func (s *Server) receiversDone() <-chan struct{} {
	done := make(chan struct{})
	go func() { // ends when every receiver is done, which stop and abort bound
		for _, q := range s.queues {
			<-q.receiver.done
		}
		close(done)
	}()
	return done
}

// ErrDeletesNotConfirmed is returned (wrapped, with the count; test with errors.Is) by
// [Server.Shutdown] and [Server.Run] when the delete of one or more handled messages was
// never confirmed by SQS during the server's life (a sender fault, or failures until the
// receipt handle expired or the final flush ended; see Stats.DeleteFailures). Those
// messages will be delivered again, so their handlers run again: exit non-zero, alert,
// or check that the handler is idempotent.
var ErrDeletesNotConfirmed = errors.New("poller: deletes not confirmed")

// abortHandlers ends the drain at its deadline: running handlers are cancelled and
// their messages released. Long polls still in flight are not cancelled: SQS would go on
// serving the dead connections, and a message released now would be handed to one and
// stay invisible for its whole visibility timeout. The live polls return within
// WaitTime and whatever they bring, released messages included, is released again.
func (s *Server) abortHandlers() {
	s.logger.Warn("poller: drain deadline reached; cancelling running handlers and releasing their messages")
	s.dispatcher.abort()
}
