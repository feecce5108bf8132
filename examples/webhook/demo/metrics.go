package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sqsworker/sqsworker"
)

// The worker's metrics (SQSWORKER_METRICS=prometheus, package otelsqsworker) that the
// demo reads, by their Prometheus names.
const (
	metricReceived = "sqsworker_messages_received_total"
	metricFinished = "sqsworker_messages_finished_total"
	labelOutcome   = "sqsworker_outcome"
)

// metricsOutcomes are the outcomes the metrics line shows, in its order.
var metricsOutcomes = []sqsworker.OutcomeKind{
	sqsworker.OutcomeDelete, sqsworker.OutcomeDeadLetter, sqsworker.OutcomeRetry,
	sqsworker.OutcomeRetryAfter, sqsworker.OutcomeDefer,
}

// scrapeTimeout bounds one GET /metrics of a local worker.
const scrapeTimeout = 5 * time.Second

// workerMetrics is what one scrape of a worker's /metrics found.
type workerMetrics struct {
	Received int64
	Finished map[string]int64 // outcome (sqsworker.OutcomeKind's String) → handler calls
}

// String is the figures of the metrics line:
// "received=N finished delete=N dead-letter=N retry=N retry-after=N defer=N".
func (m workerMetrics) String() string {
	parts := []string{fmt.Sprintf("received=%d finished", m.Received)}
	for _, outcome := range metricsOutcomes {
		parts = append(parts, fmt.Sprintf("%s=%d", outcome, m.Finished[outcome.String()]))
	}
	return strings.Join(parts, " ")
}

// metricsURL is the worker's /metrics on its health address.
func metricsURL(healthAddress string) string {
	return "http://" + healthAddress + "/metrics"
}

// scrapeMetrics reads url once, in Prometheus' text format, and sums the received and
// finished counts (finished by outcome) over their other labels (queue, job type, reason).
func scrapeMetrics(ctx context.Context, url string) (workerMetrics, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return workerMetrics{}, fmt.Errorf("demo: scraping %s: %w", url, err)
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return workerMetrics{}, fmt.Errorf("demo: scraping %s: %w", url, err)
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		return workerMetrics{}, fmt.Errorf("demo: scraping %s: %s", url, response.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(response.Body)
	if err != nil {
		return workerMetrics{}, fmt.Errorf("demo: parsing the metrics of %s: %w", url, err)
	}
	m := workerMetrics{Finished: map[string]int64{}}
	for _, series := range families[metricReceived].GetMetric() {
		m.Received += int64(series.GetCounter().GetValue())
	}
	for _, series := range families[metricFinished].GetMetric() {
		m.Finished[label(series, labelOutcome)] += int64(series.GetCounter().GetValue())
	}
	return m, nil
}

// label returns the value of series' label name, "" when it has none.
func label(series *dto.Metric, name string) string {
	for _, pair := range series.GetLabel() {
		if pair.GetName() == name {
			return pair.GetValue()
		}
	}
	return ""
}
