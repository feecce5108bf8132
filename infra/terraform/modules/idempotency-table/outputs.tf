################################################################################
# Table
################################################################################

output "table_name" {
  description = "Name of the table: SQSWORKER_IDEMPOTENCY_TABLE for the workers."
  value       = try(aws_dynamodb_table.this[0].name, null)
}

output "table_arn" {
  description = "ARN of the table (for the consumers' IAM policies)."
  value       = try(aws_dynamodb_table.this[0].arn, null)
}

output "table_id" {
  description = "Id of the table."
  value       = try(aws_dynamodb_table.this[0].id, null)
}

output "hash_key" {
  description = "Partition key attribute (type S)."
  value       = var.hash_key
}

output "ttl_attribute_name" {
  description = "Attribute DynamoDB's TTL reads (epoch seconds)."
  value       = var.ttl_attribute_name
}

output "attribute_names" {
  description = "Attribute names of the runtime's idempotency records: key (partition key), status (IN_PROGRESS or COMPLETED), expiration (epoch seconds, TTL), in_progress_expiry and in_progress_deadline (epoch milliseconds), lease, validation and data."
  value       = local.attribute_names
}

output "status_values" {
  description = "Values of the status attribute."
  value       = ["IN_PROGRESS", "COMPLETED"]
}
