variable "tags" {
  description = "Tags added to every resource the module creates."
  type        = map(string)
  default     = {}
}

################################################################################
# Bucket
################################################################################

variable "name" {
  description = "Name of the claim-check payload bucket (claimcheck.Config.Bucket for the producers, ResolverConfig.Allow for the consumers)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.name)) && !can(regex("\\.\\.|^\\d+\\.\\d+\\.\\d+\\.\\d+$", var.name))
    error_message = "name (\"${var.name}\") must be 3-63 characters of a-z, 0-9, '.' and '-', starting and ending with a letter or digit, without \"..\" and not an IP address: S3's bucket naming rules."
  }
}

variable "key_prefix" {
  description = "Key prefix of the payloads (claimcheck.Config.KeyPrefix and the Location the consumers allow). The lifecycle rule and the IAM policies are scoped to it. Empty or ending with \"/\"."
  type        = string
  default     = "payloads/"

  validation {
    condition     = can(regex("^([A-Za-z0-9!_.*'()-]+/)*$", var.key_prefix)) && !can(regex("(^|/)\\.\\.?/", var.key_prefix)) && length(var.key_prefix) <= 960
    error_message = "key_prefix (\"${var.key_prefix}\") must be empty or segments of S3's safe key characters (letters, digits, ! - _ . * ' ( )) each followed by \"/\", without \".\" or \"..\" segments, at most 960 bytes: the keys the claim-check resolver accepts."
  }
}

variable "queue_message_retention_seconds" {
  description = "message_retention_seconds of the source queue whose payloads the bucket holds (the worker-queue module's output of that name)."
  type        = number

  validation {
    condition     = var.queue_message_retention_seconds >= 60 && var.queue_message_retention_seconds <= 1209600
    error_message = "queue_message_retention_seconds (${var.queue_message_retention_seconds}) must be 60 to 1209600, SQS's range."
  }
}

variable "dlq_message_retention_seconds" {
  description = "message_retention_seconds of its dead-letter queue (the worker-queue module's dlq_message_retention_seconds output)."
  type        = number

  validation {
    condition     = var.dlq_message_retention_seconds >= 60 && var.dlq_message_retention_seconds <= 1209600
    error_message = "dlq_message_retention_seconds (${var.dlq_message_retention_seconds}) must be 60 to 1209600, SQS's range."
  }
}

variable "expiration_days" {
  description = "Days after which the lifecycle rule deletes a payload under key_prefix: the backstop for payloads no cleaner deletes (Lambda, shared fan-out pointers, failed deletes). Must exceed the queue's and the dead-letter queue's retention together, so that a message, its dead-letter copy and its redrive never outlive their payload; the default, 32, leaves 4 days for a redrive after the longest retentions (14 + 14 days)."
  type        = number
  default     = 32

  validation {
    condition     = floor(var.expiration_days) == var.expiration_days && var.expiration_days * 86400 > var.queue_message_retention_seconds + var.dlq_message_retention_seconds
    error_message = "claim-check bucket expiration (${var.expiration_days}d) must exceed queue + DLQ retention (${(var.queue_message_retention_seconds + var.dlq_message_retention_seconds) / 86400}d), in whole days: a message or its dead-letter copy would outlive its payload."
  }
}

variable "kms_key_arn" {
  description = "ARN of a customer managed KMS key for SSE-KMS (with an S3 Bucket Key). When null, SSE-S3 (AES256); encryption is always on."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn (${var.kms_key_arn == null ? "null" : "\"${var.kms_key_arn}\""}) must be a key ARN without wildcards or aliases."
  }
}

variable "force_destroy" {
  description = "Whether terraform destroy may delete the bucket with payloads still in it."
  type        = bool
  default     = false
}
