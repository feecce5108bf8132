// Package ui is what the sqsworker CLI adds to the operations page (package opspage)
// that `sqsworker ui` serves: the throughput counters read from the workers' Prometheus
// /metrics (--metrics), which keep the Prometheus parser out of the library. Its tests
// drive the page in headless Chromium against the emulators, with the CLI's outbox
// stores (internal/outboxstore).
package ui

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sqsworker/sqsworker/opspage"
)

// The Prometheus names of the otelsqsworker counters the page reads (see the
// otelsqsworker package documentation).
const (
	metricFinished = "sqsworker_messages_finished_total"
	labelQueue     = "messaging_destination_name"
	labelOutcome   = "sqsworker_outcome"
)

// Scraper reads sqsworker_messages_finished_total from workers' /metrics: the page's
// [opspage.Counters]. Build it with [NewScraper].
type Scraper struct {
	urls   []string
	client *http.Client
}

// NewScraper returns the counters of the workers serving urls (each a /metrics URL of
// the otelsqsworker Prometheus handler), each scrape bounded by timeout.
func NewScraper(urls []string, timeout time.Duration) *Scraper {
	return &Scraper{urls: urls, client: &http.Client{Timeout: timeout}}
}

// Finished scrapes every URL and sums the counter by queue name; it fails when one
// scrape does (a missing counter is no error: the worker has finished nothing yet).
func (s *Scraper) Finished(ctx context.Context) (map[string]opspage.Finished, error) {
	return scrapeFinished(ctx, s.client, s.urls)
}

// failedOutcome reports whether a sqsworker_outcome value is a failure: the message was
// dead-lettered or will be retried. "delete" is a success and "defer" is a wait.
func failedOutcome(outcome string) bool {
	return outcome == "dead-letter" || outcome == "retry" || outcome == "retry-after"
}

// scrapeFinished reads sqsworker_messages_finished_total from every worker's /metrics
// (the otelsqsworker Prometheus handler) and sums it by queue name.
func scrapeFinished(ctx context.Context, client *http.Client, urls []string) (map[string]opspage.Finished, error) {
	counts := map[string]opspage.Finished{}
	for _, url := range urls {
		if err := scrapeOne(ctx, client, url, counts); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

func scrapeOne(ctx context.Context, client *http.Client, url string, counts map[string]opspage.Finished) error {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("metrics %s: %w", url, err)
	}
	request.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	response, err := client.Do(request)
	if err != nil {
		return fmt.Errorf("metrics %s: %w", url, err)
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		return fmt.Errorf("metrics %s: %s", url, response.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(response.Body)
	if err != nil {
		return fmt.Errorf("metrics %s: %w", url, err)
	}
	family := families[metricFinished]
	if family == nil {
		return nil
	}
	for _, metric := range family.GetMetric() {
		var queue, outcome string
		for _, label := range metric.GetLabel() {
			switch label.GetName() {
			case labelQueue:
				queue = label.GetValue()
			case labelOutcome:
				outcome = label.GetValue()
			}
		}
		value := metric.GetCounter().GetValue()
		c := counts[queue]
		c.Total += value
		if failedOutcome(outcome) {
			c.Failed += value
		}
		counts[queue] = c
	}
	return nil
}
