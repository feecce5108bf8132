output "json" {
  description = "The worker's IAM policy document (JSON): consume the source queue, send to the dead-letter queue, and, when given, use the idempotency table and the KMS keys. Attach it as an inline policy, or merge it with source_policy_documents."
  value       = try(data.aws_iam_policy_document.this[0].json, null)
}
