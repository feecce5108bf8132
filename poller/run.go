package poller

import (
	"context"
	"errors"
)

// Run starts the server, waits until ctx is done or the process gets SIGTERM or
// SIGINT, then shuts down gracefully (see [Server.Shutdown]); a second signal cuts the
// drain short. It returns nil after a graceful stop, so the process can exit with code
// 0; Start's error when the server could not start; and an error wrapping
// [ErrDeletesNotConfirmed] (with the count) when deletes were never confirmed.
func (s *Server) Run(ctx context.Context) error {
	signals, stopSignals := shutdownSignals()
	defer stopSignals()
	if err := s.Start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		s.logger.Info("poller: context done; shutting down")
	case received := <-signals:
		s.logger.Info("poller: signal received; shutting down", "signal", received.String())
	}
	shutdownContext, cutShort := context.WithCancel(context.WithoutCancel(ctx))
	defer cutShort()
	go func() { // owned by Run: ends when Run returns (cutShort) or at a second signal
		select {
		case received := <-signals:
			s.logger.Warn("poller: second signal received; ending the drain now", "signal", received.String())
			cutShort()
		case <-shutdownContext.Done():
		}
	}()
	err := s.Shutdown(shutdownContext)
	if err != nil && (!errors.Is(err, context.Canceled) || errors.Is(err, ErrDeletesNotConfirmed)) {
		return err
	}
	return nil
}
