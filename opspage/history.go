package opspage

import "time"

// HistoryPoints is how many polls of one queue the page keeps for its charts at most: a
// poll is kept when at least Config.History / (HistoryPoints - 1) has passed since the
// last one kept (every poll at the default interval and history: 5 s, 1 h).
const HistoryPoints = 720

// history is a bounded ring of one queue's polls over a window of time, oldest first.
// It is written by the refresher's goroutine and read by the pages, under the
// refresher's lock.
type history struct {
	window time.Duration
	// step is the least time between two kept polls, minus half an interval, so that a
	// poll that comes a little early is not dropped.
	step   time.Duration
	ring   []sample
	oldest int // index of the oldest sample once the ring is full
}

// newHistory returns a history of window, fed every interval.
func newHistory(window, interval time.Duration) *history {
	step := max(interval, window/(HistoryPoints-1))
	capacity := min(HistoryPoints, int(window/step)+2)
	return &history{window: window, step: step - interval/2, ring: make([]sample, 0, capacity)}
}

// add keeps s unless the last sample kept is less than a step older; when the ring is
// full, s replaces the oldest sample.
func (h *history) add(s sample) {
	if n := len(h.ring); n > 0 && s.at.Sub(h.newest().at) < h.step {
		return
	}
	if len(h.ring) < cap(h.ring) {
		h.ring = append(h.ring, s)
		return
	}
	h.ring[h.oldest] = s
	h.oldest = (h.oldest + 1) % len(h.ring)
}

func (h *history) newest() sample {
	if len(h.ring) < cap(h.ring) || h.oldest == 0 {
		return h.ring[len(h.ring)-1]
	}
	return h.ring[h.oldest-1]
}

// samples returns a copy of the samples of the last window before the newest one,
// oldest first.
func (h *history) samples() []sample {
	if len(h.ring) == 0 {
		return nil
	}
	from := h.newest().at.Add(-h.window)
	out := make([]sample, 0, len(h.ring))
	for i := range len(h.ring) {
		s := h.ring[(h.oldest+i)%len(h.ring)]
		if !s.at.Before(from) {
			out = append(out, s)
		}
	}
	return out
}
