package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// cloudWatchTimeout bounds one CloudWatch query for the age of the oldest message.
const cloudWatchTimeout = 5 * time.Second

// cloudWatchAPI is the part of the CloudWatch client cloudWatchAges uses.
type cloudWatchAPI interface {
	GetMetricStatistics(ctx context.Context, input *cloudwatch.GetMetricStatisticsInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricStatisticsOutput, error)
}

// cloudWatchAges reads a queue's ApproximateAgeOfOldestMessage, a CloudWatch metric
// (SQS has no queue attribute for it), as the latest one-minute maximum of the last 15
// minutes: `sqsworker stats` and the operations page's age chart (opspage.Ages, with
// `ui --cloudwatch`). AWS documents the metric in the SQS developer guide, "Available
// CloudWatch metrics for Amazon SQS".
type cloudWatchAges struct {
	api cloudWatchAPI
	now func() time.Time
}

// OldestAge returns the latest datapoint's maximum, and false when there is none.
func (c cloudWatchAges) OldestAge(ctx context.Context, name string) (time.Duration, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, cloudWatchTimeout)
	defer cancel()
	now := c.now()
	output, err := c.api.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{
		Namespace:  aws.String("AWS/SQS"),
		MetricName: aws.String("ApproximateAgeOfOldestMessage"),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(name)}},
		StartTime:  aws.Time(now.Add(-15 * time.Minute)),
		EndTime:    aws.Time(now),
		Period:     aws.Int32(60),
		Statistics: []cwtypes.Statistic{cwtypes.StatisticMaximum},
	})
	if err != nil {
		return 0, false, fmt.Errorf("CloudWatch GetMetricStatistics failed: %w", err)
	}
	var latest *cwtypes.Datapoint
	for i := range output.Datapoints {
		point := &output.Datapoints[i]
		if point.Maximum != nil && (latest == nil || aws.ToTime(point.Timestamp).After(aws.ToTime(latest.Timestamp))) {
			latest = point
		}
	}
	if latest == nil {
		return 0, false, nil
	}
	return time.Duration(*latest.Maximum * float64(time.Second)), true, nil
}

// cloudWatchAges returns the CloudWatch reader of the configured AWS account, or nil and
// the reason: SQS goes to a custom endpoint (AWS_ENDPOINT_URL_SQS, an emulator?) with no
// CloudWatch endpoint set (AWS_ENDPOINT_URL_CLOUDWATCH), or the configuration failed.
func (a *app) cloudWatchAges(ctx context.Context) (*cloudWatchAges, string) {
	if os.Getenv("AWS_ENDPOINT_URL_SQS") != "" && os.Getenv("AWS_ENDPOINT_URL_CLOUDWATCH") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		return nil, "ApproximateAgeOfOldestMessage is a CloudWatch metric, and SQS uses a custom endpoint " +
			"(AWS_ENDPOINT_URL_SQS, an emulator?) with no CloudWatch endpoint set (AWS_ENDPOINT_URL_CLOUDWATCH)"
	}
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return nil, err.Error()
	}
	return &cloudWatchAges{api: cloudwatch.NewFromConfig(cfg), now: time.Now}, ""
}
