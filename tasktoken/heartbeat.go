package tasktoken

import (
	"context"
	"log/slog"
	"time"
)

// heartbeat sends SendTaskHeartbeat for one running job every interval. Its owner is the
// job's Handle call, which starts it before the handler and stops it (waiting for a call
// in flight) before answering the task, so no heartbeat is sent after the answer.
type heartbeat struct {
	stop chan struct{}
	done chan struct{}
}

// startHeartbeat starts the loop; closed is called once when Step Functions says the task
// is closed, after which no more heartbeats are sent. A failed call (throttling, network)
// is logged and the next one sent at the next tick.
func (m *middleware) startHeartbeat(ctx context.Context, token string, logger *slog.Logger, closed func()) *heartbeat {
	h := &heartbeat{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(m.cfg.HeartbeatInterval)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			err := m.send(ctx, token)
			switch {
			case err == nil:
			case isClosed(err):
				closed()
				return
			default:
				logger.Warn("tasktoken: heartbeat failed; the next one is sent at the next interval", "error", err)
			}
		}
	}()
	return h
}

// halt stops the loop and waits for it.
func (h *heartbeat) halt() {
	if h == nil {
		return
	}
	close(h.stop)
	<-h.done
}
