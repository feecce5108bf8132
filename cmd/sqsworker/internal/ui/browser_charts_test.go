package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/chromedp"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/opspage"
)

// TestBrowserCharts opens a queue's page in headless Chromium, mounted under a prefix in
// a service's mux with the prefix left on the path: the three charts render as inline
// SVG styled by the page's stylesheet (so the asset came through the prefix, under the
// page's CSP), and follow the queue live as the script replaces them: the depth rises to
// 12 sent messages and falls to 4 after 8 are deleted, the drain shows in the
// throughput, and the age bound runs from the poll that saw the queue empty.
func TestBrowserCharts(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	ctx := browser(t, 3*time.Minute)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	// A short history keeps every poll (one per 500 ms) and fills the chart's width.
	server, base := serve(t, client, opspage.Config{Prefix: "/ops", Queues: []string{queue.URL}, Interval: opspage.MinInterval,
		History: 10 * time.Second}, false)
	name := queueName(queue.URL)
	response := run(t, ctx, chromedp.NavigateResponse(base+"/queue?queue="+name+"&"+opspage.AccessTokenParam+"="+server.AccessToken()))
	if response.Status != http.StatusOK {
		t.Fatalf("GET /ops/queue?queue=%s&token= answered %d", name, response.Status)
	}
	charts := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#charts svg.chart')].map(c => c.dataset.chart)`))
	if fmt.Sprint(charts) != "[depth age throughput]" {
		t.Fatalf("charts on the queue page: %v, want [depth age throughput]", charts)
	}
	if border := run(t, ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('svg.chart')).borderTopWidth`)); border != "1px" {
		t.Fatalf("the chart's border is %q: the stylesheet did not load through the prefix", border)
	}
	latest := func(chart string) string {
		return fmt.Sprintf(`document.querySelector('svg.chart[data-chart=%q]').dataset.latest`, chart)
	}
	poll(t, ctx, "the age bound from the empty queue", latest("age")+` !== "no data yet"`)

	for i := range 12 {
		if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: aws.String(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, ctx, "the depth chart at 12", latest("depth")+` === "12"`)
	deleted := 0
	for deleted < 8 {
		messages := testenv.Receive(t, client, sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL), MaxNumberOfMessages: int32(min(8-deleted, 10)), VisibilityTimeout: 60}, 1, testenv.ReceiveTimeout)
		for _, m := range messages[:min(len(messages), 8-deleted)] {
			if _, err := client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(queue.URL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	// The messages received beyond the eight stay in flight (visibility 60 s): depth
	// counts them, so it is 4 whatever the receives returned.
	poll(t, ctx, "the depth chart at 4", latest("depth")+` === "4"`)
	poll(t, ctx, "a drain in the throughput chart",
		`[...document.querySelectorAll('svg.chart[data-chart="throughput"] polyline')].some(l => l.getAttribute("points").split(" ").some(p => parseFloat(p.split(",")[1]) < 130))`)
	lines := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#charts svg.chart polyline').length`))
	if lines < 3 {
		t.Fatalf("%d lines in the three charts, want one each at least", lines)
	}
	if dir := os.Getenv(screenshotsVariable); dir != "" {
		png := run(t, ctx, chromedp.Screenshot(chromedp.ID("chart-list")))
		if err := os.WriteFile(filepath.Join(dir, "ui-queue-charts.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
