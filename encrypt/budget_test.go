package encrypt_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/encrypt"
	"github.com/sqsworker/sqsworker/producer"
)

// noSQS is an SQS client that must not be called.
type noSQS struct{ producer.API }

func (noSQS) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return nil, errors.New("no SQS in this test")
}

func (noSQS) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return nil, errors.New("no SQS in this test")
}

// noKMS is a KMS client that must not be called.
type noKMS struct{ t *testing.T }

func (n noKMS) GenerateDataKey(context.Context, *kms.GenerateDataKeyInput, ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	n.t.Error("KMS must not be called")
	return nil, errors.New("no KMS in this test")
}

// The encryption attribute is one of the 10: a job with a type and 8 attributes of its
// own fits without encryption and is refused with it, before any KMS or SQS call.
func TestEncryptionAttributeCountsTowardTheTen(t *testing.T) {
	user := map[string]sqstypes.MessageAttributeValue{}
	for i := range 8 {
		user["a"+strconv.Itoa(i)] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	job := producer.Job{Type: "charge", Body: "x", Attributes: user}
	_, err := producer.Prepare("https://sqs.us-east-1.amazonaws.com/111122223333/jobs", job)
	require.NoError(t, err, "8 + job id + job type fit")

	encrypter, err := encrypt.NewEncrypter(noKMS{t}, encrypt.EncrypterConfig{KeyID: "alias/jobs"})
	require.NoError(t, err)
	p, err := producer.New(noSQS{}, producer.Config{Encrypter: encrypter})
	require.NoError(t, err)
	_, err = p.Send(context.Background(), "https://sqs.us-east-1.amazonaws.com/111122223333/jobs", job)
	var tooMany *producer.TooManyAttributesError
	require.ErrorAs(t, err, &tooMany)
	assert.Equal(t, producer.TooManyAttributesError{User: 8, Own: 3, Limit: 10}, *tooMany)
}
