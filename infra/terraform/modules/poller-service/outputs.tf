################################################################################
# Service
################################################################################

output "service_name" {
  description = "Name of the ECS service."
  value       = try(aws_ecs_service.this[0].name, null)
}

output "service_id" {
  description = "ARN of the ECS service (the provider's id)."
  value       = try(aws_ecs_service.this[0].id, null)
}

output "task_definition_arn" {
  description = "ARN of the task definition revision."
  value       = try(aws_ecs_task_definition.this[0].arn, null)
}

output "container_name" {
  description = "Name of the worker container."
  value       = var.container_name
}

output "health_check_command" {
  description = "Health check command of the container."
  value       = local.health_check_command
}

output "log_group_name" {
  description = "Name of the service's log group."
  value       = try(aws_cloudwatch_log_group.this[0].name, null)
}

################################################################################
# Autoscaling
################################################################################

output "autoscaling_policy_arn" {
  description = "ARN of the backlog-per-task target tracking policy."
  value       = try(aws_appautoscaling_policy.backlog_per_task[0].arn, null)
}

################################################################################
# IAM
################################################################################

output "task_role_arn" {
  description = "ARN of the task role (the worker's permissions)."
  value       = try(aws_iam_role.task[0].arn, null)
}

output "execution_role_arn" {
  description = "ARN of the execution role (image pull and logs)."
  value       = try(aws_iam_role.execution[0].arn, null)
}
