package producer

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
)

// reversing is an Encrypter that reverses the body (package encrypt's real one is
// tested on moto KMS).
type reversing struct{ err error }

func (r reversing) Encrypt(_ context.Context, body string, attrs map[string]types.MessageAttributeValue) (string, types.MessageAttributeValue, error) {
	if r.err != nil {
		return "", types.MessageAttributeValue{}, r.err
	}
	out := []byte(body)
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out), stringValue("envelope of " + aws.ToString(attrs[sqsworker.AttributeJobType].StringValue)), nil
}

// TestEncrypterTakesOneAttributeBeforeTheTraceContext (N22 with encryption): the
// encryption attribute is one of the 10 and comes before the trace context, which then
// travels in AWSTraceHeader; an Encrypter's error fails the job unsent.
func TestEncrypterTakesOneAttributeBeforeTheTraceContext(t *testing.T) {
	fake := newFake()
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	p := newProducer(t, fake, Config{Encrypter: reversing{}, TraceContext: func(context.Context) map[string]string {
		return map[string]string{"traceparent": "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", AttributeAWSTraceHeader: header}
	}})
	user := map[string]types.MessageAttributeValue{}
	for i := range 7 {
		user["a"+strconv.Itoa(i)] = stringValue("x")
	}
	_, err := p.Send(context.Background(), standardURL, Job{Body: "abc", Type: "t", Attributes: user})
	require.NoError(t, err)
	sent := fake.sent()
	require.Len(t, sent, 1)
	assert.Equal(t, "cba", sent[0].body)
	assert.Equal(t, "envelope of t", sent[0].attribute(sqsworker.AttributeEncryption))
	assert.Len(t, sent[0].attributes, 10)
	assert.NotContains(t, sent[0].attributes, "traceparent")
	assert.Equal(t, header, aws.ToString(sent[0].system[AttributeAWSTraceHeader].StringValue))

	user["a7"] = stringValue("x")
	_, err = p.Send(context.Background(), standardURL, Job{Body: "abc", Type: "t", Attributes: user})
	var tooMany *TooManyAttributesError
	require.ErrorAs(t, err, &tooMany)
	assert.Equal(t, TooManyAttributesError{User: 8, Own: 3, Limit: 10}, *tooMany)

	failing := newProducer(t, fake, Config{Encrypter: reversing{err: errors.New("kms: throttled")}})
	_, err = failing.Send(context.Background(), standardURL, Job{Body: "abc", Type: "t"})
	require.ErrorContains(t, err, "producer: encrypting a job for "+standardURL+": kms: throttled")
	assert.Len(t, fake.sent(), 1, "nothing more sent")
}
