package jobs_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/jobs"
)

// NewStore refuses a LargeResults it cannot use, saying what is wrong.
func TestNewStoreLargeResultsConfig(t *testing.T) {
	t.Parallel()
	api := newCountingAPI(nil) // never called: NewStore only checks it is set
	client := &s3.Client{}
	for _, c := range []struct {
		name  string
		large jobs.LargeResults
		want  string
	}{
		{"no client", jobs.LargeResults{Location: claimcheck.Location{Bucket: "b"}}, "Client is nil"},
		{"no bucket", jobs.LargeResults{Client: client}, "the bucket is empty"},
		{"climbing prefix", jobs.LargeResults{Client: client, Location: claimcheck.Location{Bucket: "b", KeyPrefix: "../x/"}}, `".." path segment`},
		{"unsafe prefix", jobs.LargeResults{Client: client, Location: claimcheck.Location{Bucket: "b", KeyPrefix: "a b/"}}, "safe key characters"},
		{"long prefix", jobs.LargeResults{Client: client, Location: claimcheck.Location{Bucket: "b", KeyPrefix: strings.Repeat("p", 900) + "/"}}, "leave room for the job id"},
	} {
		_, err := jobs.NewStore(api, jobs.Config{Table: "t", LargeResults: &c.large})
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
	_, err := jobs.NewStore(api, jobs.Config{Table: "t", LargeResults: &jobs.LargeResults{Client: client, Location: claimcheck.Location{Bucket: "b", KeyPrefix: "job-results/"}}})
	assert.NoError(t, err)
}

// ParseResultRef reads only the reference document SetResult writes.
func TestParseResultRef(t *testing.T) {
	t.Parallel()
	ref, ok := jobs.ParseResultRef([]byte(`{"sqsworker_result_ref":{"bucket":"b","key":"p/j/d","size":3,"sha256":"d"}}`))
	require.True(t, ok)
	assert.Equal(t, jobs.ResultRef{Bucket: "b", Key: "p/j/d", Size: 3, SHA256: "d"}, ref)
	assert.Equal(t, "s3://b/p/j/d", ref.String())
	for _, document := range []string{
		`{"ok":true}`, `"sqsworker_result_ref"`, `{"sqsworker_result_ref":{"bucket":"b"},"other":1}`,
		`{"sqsworker_result_ref":{"bucket":"b","extra":1}}`, `{"sqsworker_result_ref":[]}`, ``,
	} {
		_, ok := jobs.ParseResultRef([]byte(document))
		assert.False(t, ok, document)
	}
}
