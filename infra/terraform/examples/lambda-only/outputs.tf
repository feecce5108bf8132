output "queue_url" {
  description = "URL of the source queue."
  value       = module.queue.queue_url
}

output "dlq_url" {
  description = "URL of the dead-letter queue."
  value       = module.queue.dlq_url
}

output "idempotency_table_name" {
  description = "Name of the idempotency table."
  value       = module.idempotency_table.table_name
}

output "lambda_function_name" {
  description = "Name of the Lambda consumer."
  value       = module.lambda_consumer.function_name
}
