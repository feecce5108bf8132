package main

import (
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressDelay is how long an operation runs before its progress bar appears: quick
// operations print no bar at all.
const progressDelay = time.Second

// progress draws a progress bar on stderr, only when stderr is a terminal and only
// once the operation has lasted progressDelay. Scripts (stderr redirected) never see it.
type progress struct {
	a           *app
	description string
	start       time.Time
	enabled     bool
	bar         *progressbar.ProgressBar
	max         int64
}

func (a *app) progress(description string) *progress {
	return &progress{a: a, description: description, start: time.Now(), enabled: a.stderrIsTerminal()}
}

// set reports done units out of total (total <= 0: unknown, a spinner).
func (p *progress) set(done, total int64) {
	if !p.enabled || (p.bar == nil && time.Since(p.start) < progressDelay) {
		return
	}
	if total <= 0 {
		total = -1
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(p.a.stderr),
			progressbar.OptionSetDescription(p.description),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		p.max = total
	}
	if total != p.max && total > 0 {
		p.bar.ChangeMax64(total)
		p.max = total
	}
	_ = p.bar.Set64(done)
}

// done removes the bar, if one was drawn.
func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprint(p.a.stderr, "\r")
	}
}
