package poller

import (
	"os"
	"os/signal"
	"syscall"
)

// shutdownSignals returns a channel that receives SIGTERM (sent by ECS, Kubernetes and
// docker stop) and SIGINT (Ctrl-C), and a function that stops the delivery. While it is
// registered these signals no longer end the process by default: Run drains instead,
// and a second signal cuts the drain short.
func shutdownSignals() (<-chan os.Signal, func()) {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, os.Interrupt)
	return signals, func() { signal.Stop(signals) }
}
