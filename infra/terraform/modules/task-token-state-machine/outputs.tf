output "state_machine_arn" {
  description = "ARN of the state machine (null when create is false)."
  value       = try(aws_sfn_state_machine.this[0].arn, null)
}

output "state_machine_role_arn" {
  description = "ARN of the state machine's execution role: sqs:SendMessage on worker_queue_arns only."
  value       = try(aws_iam_role.state_machine[0].arn, null)
}

output "worker_policy_json" {
  description = "IAM policy document (JSON) for the worker's role: states:SendTaskSuccess, states:SendTaskFailure and states:SendTaskHeartbeat, nothing else. Attach it beside worker-permissions' document (or merge them with source_policy_documents)."
  value       = try(data.aws_iam_policy_document.worker[0].json, null)
}

output "worker_queue_arns" {
  description = "The worker queues the state machine may send to (echoed)."
  value       = var.worker_queue_arns
}
