package redrive

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/internal/sqsx"
)

// release makes every held message visible again at once (visibility 0).
func (r *run) release(ctx context.Context) error {
	if len(r.heldOrder) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	handles := make([]string, 0, len(r.heldOrder))
	for _, id := range r.heldOrder {
		handles = append(handles, r.held[id])
	}
	failed, err := releaseMessages(ctx, r.api, r.config.Source, handles)
	if err != nil || failed > 0 {
		return fmt.Errorf("redrive: %d of %d messages left in %s could not be released and stay hidden for up to %s: %v",
			failed, len(handles), r.config.Source, r.config.VisibilityTimeout, err)
	}
	return nil
}

// releaseMessages sets the visibility of the receipt handles to 0, ten at a time, and
// returns how many failed (with the first error).
func releaseMessages(ctx context.Context, api sqsx.VisibilityAPI, queueURL string, handles []string) (failed int, err error) {
	changes := make([]sqsx.VisibilityChange, len(handles))
	for i, handle := range handles {
		changes[i] = sqsx.VisibilityChange{ReceiptHandle: handle}
	}
	for _, result := range sqsx.ChangeVisibility(ctx, api, queueURL, changes) {
		if result.Err != nil {
			failed++
			if err == nil {
				err = result.Err
			}
		}
	}
	return failed, err
}

// warnReordered adds one warning per FIFO group whose order the move changed.
func (r *run) warnReordered() {
	groups := make([]string, 0, len(r.reordered))
	for group := range r.reordered {
		groups = append(groups, group)
	}
	sort.Strings(groups)
	for _, group := range groups {
		ids := r.reordered[group]
		shown := ids
		if len(shown) > 5 {
			shown = shown[:5]
		}
		more := ""
		if len(ids) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(ids)-len(shown))
		}
		r.warn(fmt.Sprintf("FIFO order changed in group %q: message %s%s re-enqueued at the end of the group in %s; "+
			"it is now ordered after the messages of that group sent after it (those processed while it was in the dead-letter queue)",
			group, strings.Join(shown, ", "), more, r.config.Destination))
	}
}

func (r *run) warn(text string) {
	r.result.Warnings = append(r.result.Warnings, text)
	r.config.Logger.Warn("redrive: " + text)
}

func sleep(ctx context.Context, delay time.Duration) error {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
