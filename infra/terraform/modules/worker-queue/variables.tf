variable "create" {
  description = "Whether to create any resources in this module (the queue, its dead-letter queue, alarms and the optional SNS topic)."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to every resource the module creates."
  type        = map(string)
  default     = {}
}

################################################################################
# Queue
################################################################################

variable "name" {
  description = "Name of the source queue. For a FIFO queue the \".fifo\" suffix is added when missing."
  type        = string

  validation {
    condition     = can(regex("^([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\\.fifo)$", var.name))
    error_message = "name (\"${var.name}\") must be 1-80 characters of A-Z, a-z, 0-9, '-' and '_' (a FIFO name includes its \".fifo\" suffix)."
  }

  validation {
    condition     = var.fifo_queue ? true : !can(regex("\\.fifo$", var.name))
    error_message = "name (\"${var.name}\") ends in \".fifo\" but fifo_queue is false: only FIFO queues may use that suffix."
  }
}

variable "fifo_queue" {
  description = "Whether the queue and its dead-letter queue are FIFO queues."
  type        = bool
  default     = false
}

variable "content_based_deduplication" {
  description = "FIFO only: use a SHA-256 hash of the body as the deduplication id."
  type        = bool
  default     = false
}

variable "visibility_timeout_seconds" {
  description = "Default visibility timeout of the source queue, in seconds. A Lambda consumer needs at least 6 x its function timeout + its maximum batching window; the lambda-consumer module checks that."
  type        = number
  default     = 30

  validation {
    condition     = var.visibility_timeout_seconds >= 0 && var.visibility_timeout_seconds <= 43200 && floor(var.visibility_timeout_seconds) == var.visibility_timeout_seconds
    error_message = "visibility_timeout_seconds (${var.visibility_timeout_seconds}) must be a whole number from 0 to 43200 (12 hours), SQS's limits."
  }
}

variable "message_retention_seconds" {
  description = "How long the source queue keeps a message, in seconds (60 to 1209599; it must stay below the dead-letter queue's retention)."
  type        = number
  default     = 345600

  validation {
    condition     = var.message_retention_seconds >= 60 && var.message_retention_seconds <= 1209600
    error_message = "message_retention_seconds (${var.message_retention_seconds}) must be from 60 to 1209600 (14 days), SQS's limits."
  }
}

variable "max_message_size" {
  description = "Largest message the queue accepts, in bytes. Set explicitly so the runtime and the redrive tool read the real limit (SQS's maximum has been 1 MiB since August 2025)."
  type        = number
  default     = 1048576

  validation {
    condition     = var.max_message_size >= 1024 && var.max_message_size <= 1048576
    error_message = "max_message_size (${var.max_message_size}) must be from 1024 (1 KiB) to 1048576 (1 MiB) bytes, SQS's limits."
  }
}

variable "receive_wait_time_seconds" {
  description = "Long-poll wait of ReceiveMessage calls that do not set one, in seconds. 20 (the maximum) keeps empty receives, and their cost, down."
  type        = number
  default     = 20

  validation {
    condition     = var.receive_wait_time_seconds >= 0 && var.receive_wait_time_seconds <= 20
    error_message = "receive_wait_time_seconds (${var.receive_wait_time_seconds}) must be from 0 to 20 seconds: SQS long polling waits at most 20 s."
  }
}

variable "delay_seconds" {
  description = "Delay before a new message becomes visible, in seconds (0 to 900)."
  type        = number
  default     = 0

  validation {
    condition     = var.delay_seconds >= 0 && var.delay_seconds <= 900
    error_message = "delay_seconds (${var.delay_seconds}) must be from 0 to 900 seconds (15 minutes)."
  }
}

variable "kms_master_key_id" {
  description = "KMS key (id, ARN or alias) for server-side encryption. When null, SQS-managed encryption (SSE-SQS) is used; encryption is always on."
  type        = string
  default     = null
}

variable "kms_data_key_reuse_period_seconds" {
  description = "How long SQS reuses a KMS data key, in seconds (60 to 86400). Only used with kms_master_key_id."
  type        = number
  default     = 300

  validation {
    condition     = var.kms_data_key_reuse_period_seconds >= 60 && var.kms_data_key_reuse_period_seconds <= 86400
    error_message = "kms_data_key_reuse_period_seconds (${var.kms_data_key_reuse_period_seconds}) must be from 60 to 86400."
  }
}

################################################################################
# Redrive (dead-letter queue)
################################################################################

variable "max_receive_count" {
  description = "Receives after which SQS moves a message to the dead-letter queue (redrive policy maxReceiveCount). Lambda consumers need at least 5; the lambda-consumer module checks that."
  type        = number
  default     = 5

  validation {
    condition     = var.max_receive_count >= 3 && var.max_receive_count <= 1000
    error_message = "max_receive_count (${var.max_receive_count}) must be from 3 to 1000: with fewer than 3 receives one slow or crashed worker, or one throttled invocation, sends a valid message to the dead-letter queue."
  }
}

variable "dlq_name" {
  description = "Name of the dead-letter queue. Defaults to \"<name>-dlq\" (\"<name>-dlq.fifo\" for FIFO)."
  type        = string
  default     = null

  validation {
    condition     = var.dlq_name == null ? true : can(regex(var.fifo_queue ? "^[A-Za-z0-9_-]{1,75}\\.fifo$" : "^[A-Za-z0-9_-]{1,80}$", var.dlq_name))
    error_message = "dlq_name (\"${var.dlq_name == null ? "null" : var.dlq_name}\") must be 1-80 characters of A-Z, a-z, 0-9, '-' and '_', ending in \".fifo\" exactly when fifo_queue is true (here ${var.fifo_queue}): a FIFO queue needs a FIFO dead-letter queue."
  }
}

variable "dlq_message_retention_seconds" {
  description = "How long the dead-letter queue keeps a message, in seconds. Must be longer than message_retention_seconds (default: 14 days, the maximum)."
  type        = number
  default     = 1209600

  validation {
    condition     = var.dlq_message_retention_seconds > var.message_retention_seconds && var.dlq_message_retention_seconds <= 1209600
    error_message = "dlq_message_retention_seconds (${var.dlq_message_retention_seconds}) must be greater than message_retention_seconds (${var.message_retention_seconds}) and at most 1209600: SQS keeps a message's original enqueue time when it moves it to a standard dead-letter queue, so a retention that is equal or shorter deletes failed messages before anyone can inspect or redrive them."
  }
}

variable "dlq_visibility_timeout_seconds" {
  description = "Visibility timeout of the dead-letter queue, in seconds. Defaults to visibility_timeout_seconds."
  type        = number
  default     = null

  validation {
    condition     = var.dlq_visibility_timeout_seconds == null ? true : var.dlq_visibility_timeout_seconds >= 0 && var.dlq_visibility_timeout_seconds <= 43200
    error_message = "dlq_visibility_timeout_seconds (${var.dlq_visibility_timeout_seconds == null ? "null" : var.dlq_visibility_timeout_seconds}) must be from 0 to 43200 (12 hours)."
  }
}

variable "dlq_max_message_size" {
  description = "Largest message the dead-letter queue accepts, in bytes. Defaults to max_message_size; it must not be smaller, or moves of large messages fail."
  type        = number
  default     = null

  validation {
    condition     = var.dlq_max_message_size == null ? true : var.dlq_max_message_size >= var.max_message_size && var.dlq_max_message_size <= 1048576
    error_message = "dlq_max_message_size (${var.dlq_max_message_size == null ? "null" : var.dlq_max_message_size}) must be from max_message_size (${var.max_message_size}) to 1048576 bytes, so every message of the source queue fits in the dead-letter queue."
  }
}

variable "dlq_receive_wait_time_seconds" {
  description = "Long-poll wait of the dead-letter queue, in seconds. Defaults to receive_wait_time_seconds."
  type        = number
  default     = null

  validation {
    condition     = var.dlq_receive_wait_time_seconds == null ? true : var.dlq_receive_wait_time_seconds >= 0 && var.dlq_receive_wait_time_seconds <= 20
    error_message = "dlq_receive_wait_time_seconds (${var.dlq_receive_wait_time_seconds == null ? "null" : var.dlq_receive_wait_time_seconds}) must be from 0 to 20 seconds: SQS long polling waits at most 20 s."
  }
}

variable "dlq_kms_master_key_id" {
  description = "KMS key for the dead-letter queue. Defaults to kms_master_key_id (SSE-SQS when both are null)."
  type        = string
  default     = null
}

################################################################################
# Alarms
################################################################################

variable "create_alarms" {
  description = "Whether to create the CloudWatch alarms (messages in the dead-letter queue, age of the oldest message, failure rate, and outbox lag when its metric is given). The rules of every alarm input are checked in modules/alarms."
  type        = bool
  default     = true
}

variable "oldest_message_age_threshold_seconds" {
  description = "Alarm when the source queue's ApproximateAgeOfOldestMessage exceeds this many seconds. Must stay below message_retention_seconds, or messages expire before the alarm fires."
  type        = number
  default     = 900

  validation {
    condition     = var.oldest_message_age_threshold_seconds > 0 && var.oldest_message_age_threshold_seconds < var.message_retention_seconds
    error_message = "oldest_message_age_threshold_seconds (${var.oldest_message_age_threshold_seconds}) must be greater than 0 and less than message_retention_seconds (${var.message_retention_seconds}); otherwise messages expire before the alarm fires."
  }
}

variable "alarm_period_seconds" {
  description = "Period of the alarms, in seconds. SQS publishes its metrics once a minute."
  type        = number
  default     = 60
}

variable "alarm_evaluation_periods" {
  description = "Number of periods an alarm condition must hold before the alarm fires."
  type        = number
  default     = 1
}

variable "alarm_actions" {
  description = "ARNs notified when an alarm fires and when it returns to OK (for example an existing SNS topic). The topic from create_sns_topic is added."
  type        = list(string)
  default     = []
}

variable "create_sns_topic" {
  description = "Whether to create an SNS topic for the alarms."
  type        = bool
  default     = false
}

variable "sns_topic_name" {
  description = "Name of the SNS topic. Defaults to \"<name>-alarms\"."
  type        = string
  default     = null
}

variable "sns_topic_kms_master_key_id" {
  description = "KMS key of the SNS topic. Leave null or use a customer managed key whose policy lets cloudwatch.amazonaws.com use it: alarms cannot publish to a topic encrypted with the AWS managed key alias/aws/sns."
  type        = string
  default     = null
}

variable "failure_rate_threshold_percent" {
  description = "Alarm when more than this percentage of the source queue's receives in a period end without a delete (retried or abandoned deliveries, from AWS/SQS NumberOfMessagesReceived and NumberOfMessagesDeleted). Null turns the alarm off."
  type        = number
  default     = 10
}

variable "failure_rate_min_received" {
  description = "The failure rate counts as 0 in a period with fewer receives than this."
  type        = number
  default     = 10
}

variable "outbox_lag_metric_namespace" {
  description = "CloudWatch namespace of the outbox relay's lag metric, in seconds. Null for no outbox-lag alarm."
  type        = string
  default     = null
}

variable "outbox_lag_metric_name" {
  description = "Name of the outbox relay's lag metric. Set together with outbox_lag_metric_namespace."
  type        = string
  default     = null
}

variable "outbox_lag_metric_dimensions" {
  description = "Dimensions of the outbox lag metric, exactly as the relay publishes them."
  type        = map(string)
  default     = {}
}

variable "outbox_lag_threshold_seconds" {
  description = "Alarm when the outbox lag exceeds this many seconds."
  type        = number
  default     = 300
}

################################################################################
# Dashboard
################################################################################

variable "create_dashboard" {
  description = "Whether to create a CloudWatch dashboard of the queue, the dead-letter queue, the alarms and dashboard_function_names."
  type        = bool
  default     = false
}

variable "dashboard_name" {
  description = "Name of the dashboard. Defaults to the queue's name without \".fifo\"."
  type        = string
  default     = null
}

variable "dashboard_function_names" {
  description = "Lambda functions shown on the dashboard (for example lambda-consumer's function_name)."
  type        = list(string)
  default     = []
}
