package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// fakeCloudWatch answers GetMetricStatistics with datapoints and keeps the last input.
type fakeCloudWatch struct {
	points []cwtypes.Datapoint
	err    error
	input  *cloudwatch.GetMetricStatisticsInput
}

func (f *fakeCloudWatch) GetMetricStatistics(_ context.Context, input *cloudwatch.GetMetricStatisticsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricStatisticsOutput, error) {
	f.input = input
	return &cloudwatch.GetMetricStatisticsOutput{Datapoints: f.points}, f.err
}

// The age of the oldest message is the latest one-minute maximum of the queue's
// ApproximateAgeOfOldestMessage over the last 15 minutes, unknown without a datapoint.
// (No emulator here answers the SDK's CloudWatch protocol: localstack/README.md.)
func TestCloudWatchAges(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 12, 0, 30, 0, time.UTC)
	api := &fakeCloudWatch{}
	ages := cloudWatchAges{api: api, now: func() time.Time { return now }}
	if age, known, err := ages.OldestAge(t.Context(), "orders"); err != nil || known {
		t.Fatalf("without a datapoint: %s, %v, %v; want unknown", age, known, err)
	}
	in := api.input
	if aws.ToString(in.Namespace) != "AWS/SQS" || aws.ToString(in.MetricName) != "ApproximateAgeOfOldestMessage" || len(in.Dimensions) != 1 ||
		aws.ToString(in.Dimensions[0].Name) != "QueueName" || aws.ToString(in.Dimensions[0].Value) != "orders" || aws.ToInt32(in.Period) != 60 ||
		!aws.ToTime(in.StartTime).Equal(now.Add(-15*time.Minute)) || !aws.ToTime(in.EndTime).Equal(now) || in.Statistics[0] != cwtypes.StatisticMaximum {
		t.Fatalf("GetMetricStatistics input = %+v", in)
	}
	api.points = []cwtypes.Datapoint{
		{Timestamp: aws.Time(now.Add(-90 * time.Second)), Maximum: aws.Float64(30)},
		{Timestamp: aws.Time(now.Add(-30 * time.Second)), Maximum: aws.Float64(95.5)},
		{Timestamp: aws.Time(now.Add(-150 * time.Second)), Maximum: aws.Float64(400)},
	}
	if age, known, err := ages.OldestAge(t.Context(), "orders"); err != nil || !known || age != 95500*time.Millisecond {
		t.Fatalf("OldestAge = %s, %v, %v; want 1m35.5s, the latest datapoint", age, known, err)
	}
	api.err = errors.New("AccessDenied")
	if _, known, err := ages.OldestAge(t.Context(), "orders"); known || err == nil || !strings.Contains(err.Error(), "CloudWatch GetMetricStatistics failed: AccessDenied") {
		t.Fatalf("a failed call: %v, %v", known, err)
	}
}
