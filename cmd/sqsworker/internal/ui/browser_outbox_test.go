package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// browseOutbox is TestBrowser's look at the outbox view of box (DynamoDB): the summary,
// the parked group and the failed entries as the relay left them; Skip of the standard
// entry through its confirmation; then, with the FIFO queue created, Retry of the parked
// group's head from the parked-groups table, after which the group goes out in order.
func browseOutbox(t *testing.T, ctx context.Context, base string, box *failedOutbox) {
	t.Helper()
	head, lone := box.group[0].ID, box.lone.ID
	do(t, ctx, chromedp.Navigate(base+"/"))
	submit(t, ctx, "nav-outbox")
	summary := run(t, ctx, chromedp.Evaluate[[]string](`["unpublished", "failed-count", "parked-count"].map(id => document.getElementById(id).textContent)`))
	if fmt.Sprint(summary) != "[1 2 1]" {
		t.Fatalf("outbox summary unpublished, failed, parked = %v, want [1 2 1]", summary)
	}
	type parkedRow struct{ Group, Entry, Waiting, Reason string }
	parked := run(t, ctx, chromedp.Evaluate[[]parkedRow](`[...document.querySelectorAll('#parked tr[data-entry]')].map(r => ({Group: r.dataset.group, Entry: r.dataset.entry, Waiting: r.querySelector('.count').textContent, Reason: r.querySelector('.reason').textContent}))`))
	if len(parked) != 1 || parked[0].Group != "G" || parked[0].Entry != head || parked[0].Waiting != "1" || parked[0].Reason != box.failedReason(t, head) {
		t.Fatalf("parked groups = %+v, want G held by %s with 1 waiting", parked, head)
	}
	type failedRow struct{ ID, Attempts, Destination, Reason string }
	failed := run(t, ctx, chromedp.Evaluate[[]failedRow](`[...document.querySelectorAll('#failed tr[data-id]')].map(r => ({ID: r.dataset.id, Attempts: r.querySelector('.attempts').textContent, Destination: r.querySelector('.destination').title, Reason: r.querySelector('.reason').textContent}))`))
	want := []failedRow{{head, "1", box.group[0].QueueURL, box.failedReason(t, head)}, {lone, "1", box.lone.QueueURL, box.failedReason(t, lone)}}
	if fmt.Sprint(failed) != fmt.Sprint(want) {
		t.Fatalf("failed entries = %+v, want %+v", failed, want)
	}
	screenshot(t, ctx, "ui-outbox.png")

	// Skip asks first; the confirmation deletes the entry.
	submit(t, ctx, "skip-"+lone)
	if destination := run(t, ctx, chromedp.Text(chromedp.ID("skip-destination"))); destination != box.lone.QueueURL {
		t.Fatalf("the skip confirmation shows destination %q, want %s", destination, box.lone.QueueURL)
	}
	if ids := failedIDs(t, box); len(ids) != 2 {
		t.Fatalf("before the confirmation the failed entries are %v, want both", ids)
	}
	submit(t, ctx, "confirm-skip")
	if ids := failedIDs(t, box); fmt.Sprint(ids) != "["+head+"]" {
		t.Fatalf("after the skip the failed entries are %v, want only %s", ids, head)
	}

	// Retry, once the queue exists: the group goes out in order.
	box.createFIFO(t)
	submit(t, ctx, "retry-parked-"+head)
	if done := run(t, ctx, chromedp.Text(chromedp.ID("done"))); done != "Retried entry "+head+": the relay sends it on its next cycle (a parked group goes on from it, in order)." {
		t.Fatalf("after Retry the page says %q", done)
	}
	box.receivedInOrder(t)
	testenv.Eventually(t, testenv.WaitTimeout, "the view shows an empty outbox", func() bool {
		response := run(t, ctx, chromedp.NavigateResponse(base+"/outbox"))
		if response.Status != http.StatusOK {
			t.Fatalf("GET /outbox answered %d", response.Status)
		}
		summary := run(t, ctx, chromedp.Evaluate[[]string](`["unpublished", "failed-count", "parked-count"].map(id => document.getElementById(id).textContent)`))
		return fmt.Sprint(summary) == "[0 0 0]" && run(t, ctx, chromedp.Evaluate[bool](`document.getElementById("no-parked") !== null && document.getElementById("no-failed") !== null`))
	})
}
