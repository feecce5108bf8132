################################################################################
# Function
################################################################################

output "function_name" {
  description = "Name of the Lambda function."
  value       = try(aws_lambda_function.this[0].function_name, null)
}

output "function_arn" {
  description = "ARN of the Lambda function."
  value       = try(aws_lambda_function.this[0].arn, null)
}

output "architectures" {
  description = "Instruction set of the function (arm64 or x86_64)."
  value       = var.architectures
}

output "timeout" {
  description = "Function timeout, in seconds."
  value       = var.timeout
}

output "log_group_name" {
  description = "Name of the function's log group."
  value       = try(aws_cloudwatch_log_group.this[0].name, null)
}

output "log_group_arn" {
  description = "ARN of the function's log group."
  value       = try(aws_cloudwatch_log_group.this[0].arn, null)
}

################################################################################
# Event source mapping
################################################################################

output "event_source_mapping_uuid" {
  description = "UUID of the event source mapping."
  value       = try(aws_lambda_event_source_mapping.this[0].uuid, null)
}

output "event_source_mapping_arn" {
  description = "ARN of the event source mapping."
  value       = try(aws_lambda_event_source_mapping.this[0].arn, null)
}

################################################################################
# IAM
################################################################################

output "role_name" {
  description = "Name of the function's IAM role."
  value       = try(aws_iam_role.this[0].name, null)
}

output "role_arn" {
  description = "ARN of the function's IAM role."
  value       = try(aws_iam_role.this[0].arn, null)
}

################################################################################
# Alarms
################################################################################

output "errors_alarm_arn" {
  description = "ARN of the alarm on the function's Errors."
  value       = try(module.alarms[0].alarm_arns.lambda_errors, null)
}

output "throttles_alarm_arn" {
  description = "ARN of the alarm on the function's Throttles."
  value       = try(module.alarms[0].alarm_arns.lambda_throttles, null)
}
