variable "create" {
  description = "Whether to create the table."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to every resource the module creates."
  type        = map(string)
  default     = {}
}

################################################################################
# Table
################################################################################

variable "name" {
  description = "Name of the table (SQSWORKER_IDEMPOTENCY_TABLE for the workers): idempotency records, and the unique jobs and scheduler that may share it."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_.-]{3,255}$", var.name))
    error_message = "name (\"${var.name}\") must be 3-255 characters of A-Z, a-z, 0-9, '_', '-' and '.', DynamoDB's table name rules."
  }
}

variable "hash_key" {
  description = "Partition key attribute (type S). The runtime (package table) writes every item's key to \"id\"; unique jobs and the scheduler have no override, so change it only for a table of idempotency records alone, together with idempotency.WithAttributeNames."
  type        = string
  default     = "id"

  validation {
    condition     = length(var.hash_key) >= 1 && length(var.hash_key) <= 255
    error_message = "hash_key (\"${var.hash_key}\") must be 1-255 characters long."
  }
}

variable "ttl_attribute_name" {
  description = "Attribute DynamoDB's TTL reads (epoch seconds). The runtime (package table) writes \"expiration\" on idempotency records and unique keys; change it only for a table of idempotency records alone, together with idempotency.WithAttributeNames."
  type        = string
  default     = "expiration"

  validation {
    condition     = length(var.ttl_attribute_name) >= 1 && length(var.ttl_attribute_name) <= 255 && var.ttl_attribute_name != var.hash_key
    error_message = "ttl_attribute_name (\"${var.ttl_attribute_name}\") must be 1-255 characters long and differ from hash_key (\"${var.hash_key}\"): TTL cannot use the key attribute."
  }
}

variable "point_in_time_recovery_enabled" {
  description = "Whether to keep continuous backups (point-in-time recovery)."
  type        = bool
  default     = true
}

variable "kms_key_arn" {
  description = "ARN of a customer managed KMS key for server-side encryption. When null, the AWS managed key aws/dynamodb is used; encryption is always on."
  type        = string
  default     = null
}

variable "deletion_protection_enabled" {
  description = "Whether DynamoDB refuses to delete the table."
  type        = bool
  default     = false
}
