output "schedule_arns" {
  description = "ARN of each schedule, by schedule name."
  value       = { for name, schedule in aws_scheduler_schedule.this : name => schedule.arn }
}

output "schedule_expressions" {
  description = "The EventBridge schedule expression each schedule's cron became, by schedule name."
  value       = local.expressions
}

output "schedule_group_name" {
  description = "Name of the schedule group."
  value       = aws_scheduler_schedule_group.this.name
}

output "role_arn" {
  description = "ARN of the execution role EventBridge Scheduler sends with."
  value       = aws_iam_role.this.arn
}

output "dead_letter_alarm_arn" {
  description = "ARN of the alarm on messages in the target's dead-letter queue."
  value       = module.alarms.alarm_arns.dlq_messages_visible
}
