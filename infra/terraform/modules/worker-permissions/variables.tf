################################################################################
# Resources the worker uses (validated to be single ARNs, without wildcards)
################################################################################

variable "create" {
  description = "Whether to emit the policy document (false: the outputs are null)."
  type        = bool
  default     = true
}

# The worker's own AWS permissions, written once: lambda-consumer and poller-service (and
# any other host, such as a Kubernetes service account role) attach this document.

variable "queue_arn" {
  description = "ARN of the source queue (worker-queue output queue_arn)."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]+$", var.queue_arn))
    error_message = "queue_arn (\"${var.queue_arn}\") must be the ARN of one SQS queue, without wildcards."
  }
}

variable "dlq_arn" {
  description = "ARN of the dead-letter queue (worker-queue output dlq_arn): the worker sends permanent failures there."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]+$", var.dlq_arn))
    error_message = "dlq_arn (\"${var.dlq_arn}\") must be the ARN of one SQS queue, without wildcards."
  }
}

variable "idempotency_table_arn" {
  description = "ARN of the idempotency table (GetItem, PutItem, UpdateItem, DeleteItem and ConditionCheckItem are granted on it only). Null when the worker does not use one."
  type        = string
  default     = null

  validation {
    condition     = var.idempotency_table_arn == null ? true : can(regex("^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:[0-9]{12}:table/[A-Za-z0-9_.-]+$", var.idempotency_table_arn))
    error_message = "idempotency_table_arn (\"${var.idempotency_table_arn == null ? "null" : var.idempotency_table_arn}\") must be the ARN of one DynamoDB table, without wildcards."
  }
}

variable "kms_key_arns" {
  description = "ARNs of customer managed KMS keys of the queues and the table, if any (kms:Decrypt and kms:GenerateDataKey are granted on them only). Leave empty with SSE-SQS and AWS managed keys."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.kms_key_arns : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", arn))])
    error_message = "kms_key_arns (${join(", ", var.kms_key_arns)}) must hold KMS key ARNs (arn:aws:kms:REGION:ACCOUNT:key/ID), without wildcards or aliases."
  }
}
