output "alarm_arns" {
  description = "ARNs of every alarm the module created, by kind (dlq_messages_visible, oldest_message_age, failure_rate, lambda_errors, lambda_throttles, outbox_lag); null for a kind not created."
  value = {
    dlq_messages_visible = try(aws_cloudwatch_metric_alarm.dlq_messages_visible[0].arn, null)
    oldest_message_age   = try(aws_cloudwatch_metric_alarm.oldest_message_age[0].arn, null)
    failure_rate         = try(aws_cloudwatch_metric_alarm.failure_rate[0].arn, null)
    lambda_errors        = try(aws_cloudwatch_metric_alarm.lambda_errors[0].arn, null)
    lambda_throttles     = try(aws_cloudwatch_metric_alarm.lambda_throttles[0].arn, null)
    outbox_lag           = try(aws_cloudwatch_metric_alarm.outbox_lag[0].arn, null)
  }
}

output "alarm_actions" {
  description = "ARNs every alarm notifies (alarm_actions plus the created SNS topic)."
  value       = local.alarm_actions
}

output "sns_topic_arn" {
  description = "ARN of the SNS topic the module created for the alarms."
  value       = try(aws_sns_topic.this[0].arn, null)
}

output "dashboard_arn" {
  description = "ARN of the CloudWatch dashboard."
  value       = try(aws_cloudwatch_dashboard.this[0].dashboard_arn, null)
}

output "dashboard_name" {
  description = "Name of the CloudWatch dashboard."
  value       = try(aws_cloudwatch_dashboard.this[0].dashboard_name, null)
}
