locals {
  # FIFO queue names must end in ".fifo"; add the suffix when the caller left it out.
  base_name = trimsuffix(var.name, ".fifo")
  name      = var.fifo_queue ? "${local.base_name}.fifo" : var.name
  dlq_name  = coalesce(var.dlq_name, var.fifo_queue ? "${local.base_name}-dlq.fifo" : "${local.base_name}-dlq")

  # Encryption is always on: a customer managed KMS key when one is given, SSE-SQS otherwise.
  dlq_kms_master_key_id = try(coalesce(var.dlq_kms_master_key_id, var.kms_master_key_id), null)

  sns_topic_name = coalesce(var.sns_topic_name, "${local.base_name}-alarms")
  alarm_actions  = concat(var.alarm_actions, aws_sns_topic.this[*].arn)
}

################################################################################
# Queue
################################################################################

resource "aws_sqs_queue" "this" {
  count = var.create ? 1 : 0

  name                        = local.name
  fifo_queue                  = var.fifo_queue
  content_based_deduplication = var.fifo_queue ? var.content_based_deduplication : null

  visibility_timeout_seconds = var.visibility_timeout_seconds
  message_retention_seconds  = var.message_retention_seconds
  max_message_size           = var.max_message_size
  receive_wait_time_seconds  = var.receive_wait_time_seconds
  delay_seconds              = var.delay_seconds

  sqs_managed_sse_enabled           = var.kms_master_key_id == null ? true : null
  kms_master_key_id                 = var.kms_master_key_id
  kms_data_key_reuse_period_seconds = var.kms_master_key_id == null ? null : var.kms_data_key_reuse_period_seconds

  tags = var.tags
}

################################################################################
# Dead-letter queue
################################################################################

resource "aws_sqs_queue" "dlq" {
  count = var.create ? 1 : 0

  name                        = local.dlq_name
  fifo_queue                  = var.fifo_queue
  content_based_deduplication = var.fifo_queue ? var.content_based_deduplication : null

  visibility_timeout_seconds = coalesce(var.dlq_visibility_timeout_seconds, var.visibility_timeout_seconds)
  message_retention_seconds  = var.dlq_message_retention_seconds
  max_message_size           = coalesce(var.dlq_max_message_size, var.max_message_size)
  receive_wait_time_seconds  = coalesce(var.dlq_receive_wait_time_seconds, var.receive_wait_time_seconds)

  sqs_managed_sse_enabled           = local.dlq_kms_master_key_id == null ? true : null
  kms_master_key_id                 = local.dlq_kms_master_key_id
  kms_data_key_reuse_period_seconds = local.dlq_kms_master_key_id == null ? null : var.kms_data_key_reuse_period_seconds

  tags = var.tags
}

# The redrive policy lives in its own resource (as in terraform-aws-modules/sqs) so the
# queue and the dead-letter queue can be created in any order without a cycle.
resource "aws_sqs_queue_redrive_policy" "this" {
  count = var.create ? 1 : 0

  queue_url = aws_sqs_queue.this[0].id
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dlq[0].arn
    maxReceiveCount     = var.max_receive_count
  })
}

# Only the source queue may use the dead-letter queue as its DLQ.
resource "aws_sqs_queue_redrive_allow_policy" "dlq" {
  count = var.create ? 1 : 0

  queue_url = aws_sqs_queue.dlq[0].id
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.this[0].arn]
  })
}

################################################################################
# Alarms
################################################################################

resource "aws_sns_topic" "this" {
  count = var.create && var.create_sns_topic ? 1 : 0

  name              = local.sns_topic_name
  kms_master_key_id = var.sns_topic_kms_master_key_id

  tags = var.tags
}

# Any message in the dead-letter queue is a job that failed for good: page someone.
resource "aws_cloudwatch_metric_alarm" "dlq_messages_visible" {
  count = var.create && var.create_alarms ? 1 : 0

  alarm_name        = "${local.dlq_name}-messages-visible"
  alarm_description = "Messages are waiting in the dead-letter queue ${local.dlq_name}: inspect them and redrive to ${local.name} once the cause is fixed."

  namespace   = "AWS/SQS"
  metric_name = "ApproximateNumberOfMessagesVisible"
  dimensions = {
    QueueName = aws_sqs_queue.dlq[0].name
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
  count = var.create && var.create_alarms ? 1 : 0

  alarm_name        = "${local.name}-oldest-message-age"
  alarm_description = "The oldest message in ${local.name} is older than ${var.oldest_message_age_threshold_seconds} s: consumers are down, too slow, or stuck."

  namespace   = "AWS/SQS"
  metric_name = "ApproximateAgeOfOldestMessage"
  dimensions = {
    QueueName = aws_sqs_queue.this[0].name
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
