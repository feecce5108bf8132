package hostsettings_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/hostsettings"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/poller"
)

// TestBothHostsRefuseABadSharedSettingWithTheSameError feeds the same bad setting to the
// poller (Config, an error from New) and to the Lambda adapter (its option, an error from
// NewBatchHandler) and expects the same problem text from both, after the host's own
// prefix.
func TestBothHostsRefuseABadSharedSettingWithTheSameError(t *testing.T) {
	cases := []struct {
		name        string
		concurrency int
		backoff     sqsworker.Backoff
		want        []string
	}{
		{name: "concurrency below 1", concurrency: -1, want: []string{"Concurrency -1 is below 1"}},
		{name: "negative backoff base", backoff: sqsworker.Backoff{Base: -time.Second}, want: []string{"Backoff.Base -1s is negative"}},
		{name: "negative backoff cap", backoff: sqsworker.Backoff{Cap: -time.Second}, want: []string{"Backoff.Cap -1s is negative"}},
		{name: "backoff base above cap", backoff: sqsworker.Backoff{Base: time.Minute, Cap: time.Second}, want: []string{"Backoff.Base 1m0s exceeds Backoff.Cap 1s"}},
		{name: "unknown jitter", backoff: sqsworker.Backoff{Jitter: 7}, want: []string{"Backoff.Jitter 7 is not a known jitter mode"}},
		{name: "two backoff problems", backoff: sqsworker.Backoff{Base: -time.Second, Jitter: 9}, want: []string{"Backoff.Base -1s is negative", "Backoff.Jitter 9 is not a known jitter mode"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			config := poller.Config{QueueURL: "https://sqs.us-east-1.amazonaws.com/1/jobs", Concurrency: tc.concurrency, Backoff: tc.backoff, Logger: slog.New(slog.DiscardHandler)}
			_, err := poller.New(nil, config, sqsworker.HandlerFunc(nil))
			require.Error(t, err)
			lines := strings.Split(err.Error(), "\n")

			option := lambda.WithBackoff(tc.backoff)
			if tc.concurrency != 0 {
				option = lambda.WithConcurrency(tc.concurrency)
			}
			batch, lambdaErr := lambda.NewBatchHandler(sqsworker.HandlerFunc(nil), option)
			require.Nil(t, batch)
			require.Error(t, lambdaErr, "the Lambda adapter refuses the option")
			lambdaLines := strings.Split(lambdaErr.Error(), "\n")
			require.Len(t, lambdaLines, len(tc.want))
			for i, want := range tc.want {
				assert.Contains(t, lines, "poller: Config."+want)
				assert.Equal(t, "lambda: "+want, lambdaLines[i])
			}
		})
	}
	assert.Equal(t, hostsettings.DefaultConcurrency, lambda.DefaultConcurrency, "one default")
}
