locals {
  # FIFO queue names must end in ".fifo"; add the suffix when the caller left it out.
  base_name = trimsuffix(var.name, ".fifo")
  name      = var.fifo_queue ? "${local.base_name}.fifo" : var.name
  dlq_name  = coalesce(var.dlq_name, var.fifo_queue ? "${local.base_name}-dlq.fifo" : "${local.base_name}-dlq")

  # Encryption is always on: a customer managed KMS key when one is given, SSE-SQS otherwise.
  dlq_kms_master_key_id = try(coalesce(var.dlq_kms_master_key_id, var.kms_master_key_id), null)

  sns_topic_name = coalesce(var.sns_topic_name, "${local.base_name}-alarms")
  dashboard_name = coalesce(var.dashboard_name, local.base_name)
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
# Alarms and dashboard (written once, in modules/alarms)
################################################################################

module "alarms" {
  source = "../alarms"
  count  = var.create ? 1 : 0

  create_alarms = var.create_alarms
  queue_name    = local.name
  dlq_name      = local.dlq_name

  oldest_message_age_threshold_seconds = var.oldest_message_age_threshold_seconds
  failure_rate_threshold_percent       = var.failure_rate_threshold_percent
  failure_rate_min_received            = var.failure_rate_min_received

  outbox_lag_metric_namespace  = var.outbox_lag_metric_namespace
  outbox_lag_metric_name       = var.outbox_lag_metric_name
  outbox_lag_metric_dimensions = var.outbox_lag_metric_dimensions
  outbox_lag_threshold_seconds = var.outbox_lag_threshold_seconds

  alarm_period_seconds     = var.alarm_period_seconds
  alarm_evaluation_periods = var.alarm_evaluation_periods
  alarm_actions            = var.alarm_actions

  create_sns_topic            = var.create_sns_topic
  sns_topic_name              = local.sns_topic_name
  sns_topic_kms_master_key_id = var.sns_topic_kms_master_key_id

  create_dashboard         = var.create_dashboard
  dashboard_name           = local.dashboard_name
  dashboard_function_names = var.dashboard_function_names

  tags = var.tags
}

# The alarms and the topic were resources of this module before modules/alarms existed.
moved {
  from = aws_sns_topic.this
  to   = module.alarms[0].aws_sns_topic.this
}

moved {
  from = aws_cloudwatch_metric_alarm.dlq_messages_visible
  to   = module.alarms[0].aws_cloudwatch_metric_alarm.dlq_messages_visible
}

moved {
  from = aws_cloudwatch_metric_alarm.oldest_message_age
  to   = module.alarms[0].aws_cloudwatch_metric_alarm.oldest_message_age
}
