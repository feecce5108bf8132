package poller

// turns bounds how many handlers run at once to Config.Concurrency, handing freed turns
// to the waiting messages in the order they asked (receive order; for a FIFO group, when
// the group reaches the message). Without Config.Prefetch no message ever waits here:
// the pool holds at most Concurrency messages, so a turn is always free. With it the
// pool holds up to Prefetch more, received but not started; they wait here, their
// heartbeats running, and a handler that returns starts the next at once. Its fields
// are guarded by dispatcher.mu.
type turns struct {
	capacity int
	running  int
	waiting  []*turn // FIFO
}

// turn is one message's wait for a handler turn. granted is set (under dispatcher.mu)
// before ready is closed when the turn is given, and read only after ready is closed;
// ready is closed without it when the shutdown released the message instead.
type turn struct {
	delivery *delivery
	ready    chan struct{}
	granted  bool
}

// ask queues a turn for d, granted at once when one is free and none is waiting.
// dispatcher.mu must be held.
func (t *turns) ask(d *delivery) *turn {
	tn := &turn{delivery: d, ready: make(chan struct{})}
	if t.running < t.capacity && len(t.waiting) == 0 {
		t.running++
		tn.granted = true
		close(tn.ready)
		return tn
	}
	t.waiting = append(t.waiting, tn)
	return tn
}

// done ends a running handler's turn and gives it to the longest waiting message.
// dispatcher.mu must be held.
func (t *turns) done() {
	t.running--
	for t.running < t.capacity && len(t.waiting) > 0 {
		next := t.waiting[0]
		t.waiting[0] = nil
		t.waiting = t.waiting[1:]
		t.running++
		next.granted = true
		close(next.ready)
	}
}

// cancel removes every waiting turn, waking each without a grant, and returns their
// messages, in order (for the shutdown to release). dispatcher.mu must be held.
func (t *turns) cancel() []*delivery {
	held := make([]*delivery, 0, len(t.waiting))
	for _, tn := range t.waiting {
		held = append(held, tn.delivery)
		close(tn.ready)
	}
	t.waiting = nil
	return held
}
