output "queue_url" {
  description = "URL of the source queue."
  value       = module.queue.queue_url
}

output "dlq_url" {
  description = "URL of the dead-letter queue."
  value       = module.queue.dlq_url
}

output "sns_topic_arn" {
  description = "SNS topic of the queue alarms (subscribe to it)."
  value       = module.queue.sns_topic_arn
}

output "idempotency_table_name" {
  description = "Name of the idempotency table."
  value       = module.idempotency_table.table_name
}

output "lambda_function_name" {
  description = "Name of the Lambda consumer."
  value       = module.lambda_consumer.function_name
}

output "poller_service_name" {
  description = "Name of the ECS poller service."
  value       = module.poller.service_name
}

output "poller_log_group_name" {
  description = "Log group of the ECS poller."
  value       = module.poller.log_group_name
}
