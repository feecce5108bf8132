################################################################################
# Queue
################################################################################

output "queue_id" {
  description = "URL of the source queue (the provider's id)."
  value       = try(aws_sqs_queue.this[0].id, null)
}

output "queue_url" {
  description = "URL of the source queue: SQSWORKER_QUEUE_URL for the workers."
  value       = try(aws_sqs_queue.this[0].url, null)
}

output "queue_arn" {
  description = "ARN of the source queue."
  value       = try(aws_sqs_queue.this[0].arn, null)
}

output "queue_name" {
  description = "Name of the source queue."
  value       = try(aws_sqs_queue.this[0].name, null)
}

# The settings below are echoed from the inputs (not read from the resources) so they are
# known at plan time: the lambda-consumer module validates against them.

output "fifo_queue" {
  description = "Whether the queues are FIFO queues (input of lambda-consumer)."
  value       = var.fifo_queue
}

output "visibility_timeout_seconds" {
  description = "Visibility timeout of the source queue (input of lambda-consumer's 6x check)."
  value       = var.visibility_timeout_seconds
}

output "max_receive_count" {
  description = "maxReceiveCount of the redrive policy (input of lambda-consumer's check)."
  value       = var.max_receive_count
}

output "message_retention_seconds" {
  description = "Retention of the source queue, in seconds."
  value       = var.message_retention_seconds
}

output "max_message_size" {
  description = "Largest message the source queue accepts, in bytes."
  value       = var.max_message_size
}

################################################################################
# Dead-letter queue
################################################################################

output "dlq_id" {
  description = "URL of the dead-letter queue (the provider's id)."
  value       = try(aws_sqs_queue.dlq[0].id, null)
}

output "dlq_url" {
  description = "URL of the dead-letter queue."
  value       = try(aws_sqs_queue.dlq[0].url, null)
}

output "dlq_arn" {
  description = "ARN of the dead-letter queue."
  value       = try(aws_sqs_queue.dlq[0].arn, null)
}

output "dlq_name" {
  description = "Name of the dead-letter queue."
  value       = try(aws_sqs_queue.dlq[0].name, null)
}

output "dlq_message_retention_seconds" {
  description = "Retention of the dead-letter queue, in seconds."
  value       = var.dlq_message_retention_seconds
}

################################################################################
# Alarms
################################################################################

output "dlq_alarm_arn" {
  description = "ARN of the alarm on messages in the dead-letter queue."
  value       = try(module.alarms[0].alarm_arns.dlq_messages_visible, null)
}

output "oldest_message_age_alarm_arn" {
  description = "ARN of the alarm on the age of the oldest message."
  value       = try(module.alarms[0].alarm_arns.oldest_message_age, null)
}

output "failure_rate_alarm_arn" {
  description = "ARN of the alarm on the failure rate (receives not followed by a delete)."
  value       = try(module.alarms[0].alarm_arns.failure_rate, null)
}

output "outbox_lag_alarm_arn" {
  description = "ARN of the outbox-lag alarm, when its metric is given."
  value       = try(module.alarms[0].alarm_arns.outbox_lag, null)
}

output "alarm_actions" {
  description = "ARNs the queue alarms notify (alarm_actions plus the created SNS topic): pass them to lambda-consumer's alarm_actions."
  value       = try(module.alarms[0].alarm_actions, var.alarm_actions)
}

output "sns_topic_arn" {
  description = "ARN of the SNS topic the module created for the alarms."
  value       = try(module.alarms[0].sns_topic_arn, null)
}

output "dashboard_name" {
  description = "Name of the CloudWatch dashboard."
  value       = try(module.alarms[0].dashboard_name, null)
}
