package testenv

import (
	"context"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
)

// KMS returns a KMS client for the emulator (moto, AWS_ENDPOINT_URL_KMS from
// localstack/env), failing the test when that endpoint is not set.
func KMS(t testing.TB) *kms.Client {
	t.Helper()
	cfg := AWSConfig(t)
	if os.Getenv("AWS_ENDPOINT_URL_KMS") == "" {
		t.Fatal("testenv: AWS_ENDPOINT_URL_KMS is not set; eval \"$(localstack/env)\" sets it (moto serves KMS)")
	}
	return kms.NewFromConfig(cfg)
}

// NewKMSKey creates a symmetric encryption key for the test and returns its ARN and key
// id; the key is scheduled for deletion (7 days, KMS's shortest window) when the test
// ends.
func NewKMSKey(t testing.TB, client *kms.Client) (arn, id string) {
	t.Helper()
	output, err := client.CreateKey(context.Background(), &kms.CreateKeyInput{Description: aws.String(UniqueName(t))})
	if err != nil {
		t.Fatalf("testenv: creating a KMS key: %v", err)
	}
	id = aws.ToString(output.KeyMetadata.KeyId)
	t.Cleanup(func() {
		_, _ = client.ScheduleKeyDeletion(context.Background(), &kms.ScheduleKeyDeletionInput{KeyId: aws.String(id), PendingWindowInDays: aws.Int32(7)})
	})
	return aws.ToString(output.KeyMetadata.Arn), id
}
