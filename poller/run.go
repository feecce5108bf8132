package poller

import (
	"context"
	"errors"
	"os"
	"time"
)

// Run starts the server, waits until ctx is done or the process gets SIGTERM or
// SIGINT, then shuts down gracefully (see [Server.Shutdown]). The second signal the
// process gets cuts the drain short. Signals are counted, not context ends: with
// ctx from signal.NotifyContext, one SIGTERM both ends ctx and reaches Run, in either
// order, and is still the first signal, so it drains. With Config.StopTimeout the
// shutdown ends StopTimeout − 4 s after the signal at the latest, so the process exits
// before the platform kills it. It returns nil after a graceful stop, so the process can
// exit with code 0; Start's error when the server could not start; and an error
// wrapping [ErrDeletesNotConfirmed] (with the count) when deletes were never confirmed.
func (s *Server) Run(ctx context.Context) error {
	signals, stopSignals := s.signals()
	defer stopSignals()
	if err := s.Start(ctx); err != nil {
		return err
	}
	signalled := false
	select {
	case <-ctx.Done():
		s.logger.Info("poller: context done; shutting down")
	case received := <-signals:
		signalled = true
		s.logger.Info("poller: signal received; shutting down", "signal", received.String())
	}
	shutdownContext, cutShort := context.WithCancel(context.WithoutCancel(ctx))
	defer cutShort()
	go s.watchSecondSignal(shutdownContext, signals, signalled, cutShort) // ends when Run returns (cutShort)
	if stop := s.config.StopTimeout; stop > 0 {
		// Exit before the platform's kill: the long polls still in flight are cancelled
		// so the final delete flush ends a second before it.
		exit := time.AfterFunc(stop-stopExitMargin, func() {
			s.logger.Warn("poller: the stop timeout is near; ending the shutdown now (long polls in flight are cancelled)", "stop_timeout", stop)
			cutShort()
		})
		defer exit.Stop()
	}
	err := s.Shutdown(shutdownContext)
	if err != nil && (!errors.Is(err, context.Canceled) || errors.Is(err, ErrDeletesNotConfirmed)) {
		return err
	}
	return nil
}

// watchSecondSignal calls cutShort at the second signal the process gets (one if
// signalled, when Run's wait ended on a signal), or returns when ctx ends. A signal that
// arrives after ctx ended the wait is the first: the signal that ended ctx (through
// signal.NotifyContext) reaches Run's registration too, possibly later.
func (s *Server) watchSecondSignal(ctx context.Context, signals <-chan os.Signal, signalled bool, cutShort func()) {
	for {
		select {
		case received := <-signals:
			if !signalled {
				signalled = true
				s.logger.Info("poller: signal received while draining; a second one ends the drain now", "signal", received.String())
				continue
			}
			s.logger.Warn("poller: second signal received; ending the drain now", "signal", received.String())
			cutShort()
			return
		case <-ctx.Done():
			return
		}
	}
}
