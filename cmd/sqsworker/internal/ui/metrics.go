package ui

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The Prometheus names of the otelsqsworker counters the page reads (see the
// otelsqsworker package documentation).
const (
	metricFinished = "sqsworker_messages_finished_total"
	labelQueue     = "messaging_destination_name"
	labelOutcome   = "sqsworker_outcome"
)

// finishedCounts are the handler calls that returned, for one queue, summed over every
// worker scraped.
type finishedCounts struct {
	// Total counts every outcome; Failed counts dead-letter, retry and retry-after.
	Total, Failed float64
}

// failedOutcome reports whether a sqsworker_outcome value is a failure: the message was
// dead-lettered or will be retried. "delete" is a success and "defer" is a wait.
func failedOutcome(outcome string) bool {
	return outcome == "dead-letter" || outcome == "retry" || outcome == "retry-after"
}

// scrapeFinished reads sqsworker_messages_finished_total from every worker's /metrics
// (the otelsqsworker Prometheus handler) and sums it by queue name.
func scrapeFinished(ctx context.Context, client *http.Client, urls []string) (map[string]finishedCounts, error) {
	counts := map[string]finishedCounts{}
	for _, url := range urls {
		if err := scrapeOne(ctx, client, url, counts); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

func scrapeOne(ctx context.Context, client *http.Client, url string, counts map[string]finishedCounts) error {
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
