# One place for every alarm kind of the sqsworker modules: worker-queue, lambda-consumer and
# eventbridge-schedules call this module with the names they own, so each alarm is written once.

locals {
  alarms = var.create && var.create_alarms

  alarm_actions = concat(var.alarm_actions, aws_sns_topic.this[*].arn)

  dlq_alarm          = local.alarms && var.dlq_name != null
  queue_alarms       = local.alarms && var.queue_name != null
  failure_rate_alarm = local.queue_alarms && var.failure_rate_threshold_percent != null
  lambda_alarms      = local.alarms && var.function_name != null
  outbox_lag_alarm   = local.alarms && var.outbox_lag_metric_namespace != null

  # What dashboard.tf needs from the provider.
  region = try(data.aws_region.current[0].id, "")

  alarm_arns = concat(
    aws_cloudwatch_metric_alarm.dlq_messages_visible[*].arn,
    aws_cloudwatch_metric_alarm.oldest_message_age[*].arn,
    aws_cloudwatch_metric_alarm.failure_rate[*].arn,
    aws_cloudwatch_metric_alarm.lambda_errors[*].arn,
    aws_cloudwatch_metric_alarm.lambda_throttles[*].arn,
    aws_cloudwatch_metric_alarm.outbox_lag[*].arn,
  )
}

################################################################################
# SNS topic (only when asked)
################################################################################

resource "aws_sns_topic" "this" {
  count = var.create && var.create_sns_topic ? 1 : 0

  name              = var.sns_topic_name
  kms_master_key_id = var.sns_topic_kms_master_key_id

  tags = var.tags
}

################################################################################
# Queues (AWS/SQS, published once a minute)
################################################################################

# Any message in the dead-letter queue is a job that failed for good: page someone.
resource "aws_cloudwatch_metric_alarm" "dlq_messages_visible" {
  count = local.dlq_alarm ? 1 : 0

  alarm_name        = "${var.dlq_name}-messages-visible"
  alarm_description = "Messages are waiting in the dead-letter queue ${var.dlq_name}: inspect them (sqsworker dlq) and redrive${var.queue_name == null ? "" : " to ${var.queue_name}"} once the cause is fixed."

  namespace   = "AWS/SQS"
  metric_name = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = var.dlq_name
  }
  statistic           = "Maximum"
  period              = var.alarm_period_seconds
  evaluation_periods  = var.alarm_evaluation_periods
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"

  alarm_actions = local.alarm_actions
  ok_actions    = local.alarm_actions

  tags = var.tags
}

# The oldest message is older than the threshold: consumers are down, too slow, or stuck.
resource "aws_cloudwatch_metric_alarm" "oldest_message_age" {
  count = local.queue_alarms ? 1 : 0

  alarm_name        = "${var.queue_name}-oldest-message-age"
  alarm_description = "The oldest message in ${var.queue_name} is older than ${var.oldest_message_age_threshold_seconds} s: consumers are down, too slow, or stuck."

  namespace   = "AWS/SQS"
  metric_name = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = var.queue_name
  }
  statistic           = "Maximum"
  period              = var.alarm_period_seconds
  evaluation_periods  = var.alarm_evaluation_periods
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.oldest_message_age_threshold_seconds
  treat_missing_data  = "notBreaching"

  alarm_actions = local.alarm_actions
  ok_actions    = local.alarm_actions

  tags = var.tags
}

# Failure rate from SQS's own counters, because these modules know no namespace of the
# worker's metrics: a receive not followed by a delete is a delivery that failed (a retry
# after a batch item failure, an abandoned handler, an expired visibility timeout). It works
# the same for both hosts and needs nothing from the application. A message the worker
# moves to the dead-letter queue itself is deleted from the source, so it is not counted
# here; the dead-letter alarm covers it.
resource "aws_cloudwatch_metric_alarm" "failure_rate" {
  count = local.failure_rate_alarm ? 1 : 0

  alarm_name        = "${var.queue_name}-failure-rate"
  alarm_description = "More than ${var.failure_rate_threshold_percent == null ? 0 : var.failure_rate_threshold_percent}% of the receives from ${var.queue_name} ended without a delete (retried or abandoned deliveries), counted in periods with at least ${var.failure_rate_min_received} receives."

  metric_query {
    id = "received"
    metric {
      namespace   = "AWS/SQS"
      metric_name = "NumberOfMessagesReceived"
      dimensions  = { QueueName = var.queue_name }
      period      = var.alarm_period_seconds
      stat        = "Sum"
    }
  }

  metric_query {
    id = "deleted"
    metric {
      namespace   = "AWS/SQS"
      metric_name = "NumberOfMessagesDeleted"
      dimensions  = { QueueName = var.queue_name }
      period      = var.alarm_period_seconds
      stat        = "Sum"
    }
  }

  metric_query {
    id          = "failure_rate"
    label       = "Failure rate (%)"
    expression  = local.failure_rate_expression
    return_data = true
  }

  evaluation_periods  = var.alarm_evaluation_periods
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.failure_rate_threshold_percent
  treat_missing_data  = "notBreaching"

  alarm_actions = local.alarm_actions
  ok_actions    = local.alarm_actions

  tags = var.tags
}

################################################################################
# Lambda consumer (AWS/Lambda)
################################################################################

resource "aws_cloudwatch_metric_alarm" "lambda_errors" {
  count = local.lambda_alarms ? 1 : 0

  alarm_name        = "${var.function_name}-errors"
  alarm_description = "Invocations of ${var.function_name} failed as a whole (crash, timeout, out of memory): the whole batch returns to the queue. Failed batch items are not Errors."

  namespace   = "AWS/Lambda"
  metric_name = "Errors"
  dimensions = {
    FunctionName = var.function_name
  }
  statistic           = "Sum"
  period              = var.alarm_period_seconds
  evaluation_periods  = var.alarm_evaluation_periods
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.lambda_errors_threshold
  treat_missing_data  = "notBreaching"

  alarm_actions = local.alarm_actions
  ok_actions    = local.alarm_actions

  tags = var.tags
}

resource "aws_cloudwatch_metric_alarm" "lambda_throttles" {
  count = local.lambda_alarms ? 1 : 0

  alarm_name        = "${var.function_name}-throttles"
  alarm_description = "Invocations of ${var.function_name} were throttled: raise reserved concurrency or lower the event source mapping's maximum_concurrency, or throttled batches count as receives toward maxReceiveCount."

  namespace   = "AWS/Lambda"
  metric_name = "Throttles"
  dimensions = {
    FunctionName = var.function_name
  }
  statistic           = "Sum"
  period              = var.alarm_period_seconds
  evaluation_periods  = var.alarm_evaluation_periods
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.lambda_throttles_threshold
  treat_missing_data  = "notBreaching"

  alarm_actions = local.alarm_actions
  ok_actions    = local.alarm_actions

  tags = var.tags
}

################################################################################
# Outbox lag (the relay's own metric)
################################################################################

resource "aws_cloudwatch_metric_alarm" "outbox_lag" {
  count = local.outbox_lag_alarm ? 1 : 0

  alarm_name        = "${coalesce(var.queue_name, var.function_name, var.outbox_lag_metric_name)}-outbox-lag"
  alarm_description = "The outbox relay lags more than ${var.outbox_lag_threshold_seconds} s (${var.outbox_lag_metric_namespace == null ? "" : var.outbox_lag_metric_namespace}/${var.outbox_lag_metric_name == null ? "" : var.outbox_lag_metric_name}): jobs written to the outbox are not reaching the queue."

  namespace           = var.outbox_lag_metric_namespace
  metric_name         = var.outbox_lag_metric_name
  dimensions          = var.outbox_lag_metric_dimensions
  statistic           = "Maximum"
  period              = var.alarm_period_seconds
  evaluation_periods  = var.alarm_evaluation_periods
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.outbox_lag_threshold_seconds
  # No data means the relay publishes nothing: it is down, which is the lag this alarm is for.
  treat_missing_data = "breaching"

  alarm_actions = local.alarm_actions
  ok_actions    = local.alarm_actions

  tags = var.tags
}

################################################################################
# Dashboard
################################################################################

data "aws_region" "current" {
  count = var.create && var.create_dashboard ? 1 : 0
}

resource "aws_cloudwatch_dashboard" "this" {
  count = var.create && var.create_dashboard ? 1 : 0

  dashboard_name = var.dashboard_name
  dashboard_body = local.dashboard_body
}
