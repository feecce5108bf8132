package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// createQueue creates the queue name with a dead-letter queue name-dlq that takes a
// message after 5 failed receives, and returns the queue's URL. CreateQueue returns the
// existing queue when it has the same attributes, so running the example twice is fine.
// In production the queues come from Terraform (infra/terraform).
func createQueue(ctx context.Context, client *sqs.Client, name string) (string, error) {
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	if err != nil {
		return "", fmt.Errorf("creating %s-dlq: %w", name, err)
	}
	attributes, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("reading the ARN of %s-dlq: %w", name, err)
	}
	policy, _ := json.Marshal(map[string]any{
		"deadLetterTargetArn": attributes.Attributes[string(types.QueueAttributeNameQueueArn)],
		"maxReceiveCount":     5,
	})
	queue, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String(name),
		Attributes: map[string]string{string(types.QueueAttributeNameRedrivePolicy): string(policy)},
	})
	if err != nil {
		return "", fmt.Errorf("creating %s: %w", name, err)
	}
	return aws.ToString(queue.QueueUrl), nil
}
