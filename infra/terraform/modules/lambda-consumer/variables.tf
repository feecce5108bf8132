variable "create" {
  description = "Whether to create any resources in this module."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to every resource the module creates."
  type        = map(string)
  default     = {}
}

################################################################################
# Function
################################################################################

variable "function_name" {
  description = "Name of the Lambda function (also the name of its IAM role unless role_name is set)."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,64}$", var.function_name))
    error_message = "function_name (\"${var.function_name}\") must be 1-64 characters of A-Z, a-z, 0-9, '-' and '_'."
  }
}

variable "description" {
  description = "Description of the function."
  type        = string
  default     = "sqsworker SQS consumer"
}

variable "filename" {
  description = "Path of the deployment package built by `make lambda` (dist/bootstrap-arm64.zip: a provided.al2023 arm64 binary named bootstrap)."
  type        = string

  validation {
    condition     = can(regex("\\.zip$", var.filename))
    error_message = "filename (\"${var.filename}\") must be the .zip built by `make lambda` (dist/bootstrap-arm64.zip)."
  }
}

variable "architectures" {
  description = "Instruction set of the function: [\"arm64\"] (Graviton, the default) or [\"x86_64\"]; the zip must hold a bootstrap built for it (`make lambda` builds dist/bootstrap-arm64.zip and dist/bootstrap-amd64.zip)."
  type        = list(string)
  default     = ["arm64"]

  validation {
    condition     = length(var.architectures) == 1 && contains(["arm64", "x86_64"], var.architectures[0])
    error_message = "architectures (${jsonencode(var.architectures)}) must be [\"arm64\"] or [\"x86_64\"]: Lambda takes exactly one."
  }
}

variable "timeout" {
  description = "Function timeout, in seconds (1 to 900). The queue's visibility timeout must be at least 6 times this plus the batching window."
  type        = number
  default     = 30

  validation {
    condition     = var.timeout >= 1 && var.timeout <= 900 && floor(var.timeout) == var.timeout
    error_message = "timeout (${var.timeout}) must be a whole number of seconds from 1 to 900, Lambda's limits."
  }
}

variable "memory_size" {
  description = "Memory of the function, in MB (128 to 10240)."
  type        = number
  default     = 128

  validation {
    condition     = var.memory_size >= 128 && var.memory_size <= 10240
    error_message = "memory_size (${var.memory_size}) must be from 128 to 10240 MB, Lambda's limits."
  }
}

variable "reserved_concurrent_executions" {
  description = "Reserved concurrency of the function. Leave null (or -1) and cap concurrency with maximum_concurrency instead: a reservation below 5 throttles the event source mapping's pollers."
  type        = number
  default     = null

  validation {
    condition     = var.reserved_concurrent_executions == null ? true : var.reserved_concurrent_executions == -1 || var.reserved_concurrent_executions >= 5
    error_message = "reserved_concurrent_executions (${var.reserved_concurrent_executions == null ? "null" : var.reserved_concurrent_executions}) is below 5: the SQS event source mapping starts with 5 concurrent pollers, so invocations beyond the reservation are throttled, every throttle uses up a receive, and valid messages reach the dead-letter queue with no function logs. Limit concurrency with maximum_concurrency (2-1000) on the event source mapping instead, and leave reserved_concurrent_executions null (or -1)."
  }

  validation {
    condition     = var.reserved_concurrent_executions == null || var.maximum_concurrency == null ? true : var.reserved_concurrent_executions == -1 || var.reserved_concurrent_executions >= var.maximum_concurrency
    error_message = "reserved_concurrent_executions (${var.reserved_concurrent_executions == null ? "null" : var.reserved_concurrent_executions}) must be at least maximum_concurrency (${var.maximum_concurrency == null ? "null" : var.maximum_concurrency}): with less, the event source mapping invokes more copies than the reservation allows, and the throttled invocations push valid messages towards the dead-letter queue."
  }
}

variable "environment_variables" {
  description = "Environment variables of the function: the handler's own settings (the webhook example reads SQSWORKER_IDEMPOTENCY_TABLE). SQSWORKER_QUEUE_URL is set by the module."
  type        = map(string)
  default     = {}
}

variable "role_name" {
  description = "Name of the function's IAM role. Defaults to function_name."
  type        = string
  default     = null
}

variable "log_retention_in_days" {
  description = "Retention of the function's log group, in days."
  type        = number
  default     = 30

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_in_days)
    error_message = "log_retention_in_days (${var.log_retention_in_days}) must be one of CloudWatch Logs' values: 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288 or 3653 (logs never kept forever)."
  }
}

variable "log_group_kms_key_arn" {
  description = "ARN of a KMS key for the log group. When null, CloudWatch Logs' default encryption is used."
  type        = string
  default     = null
}

################################################################################
# Queue (from the worker-queue module's outputs)
################################################################################

variable "queue_arn" {
  description = "ARN of the source queue (worker-queue output queue_arn)."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]+$", var.queue_arn))
    error_message = "queue_arn (\"${var.queue_arn}\") must be the ARN of one SQS queue, without wildcards."
  }
}

variable "queue_url" {
  description = "URL of the source queue (worker-queue output queue_url), passed to the function as SQSWORKER_QUEUE_URL. Optional."
  type        = string
  default     = null
}

variable "dlq_arn" {
  description = "ARN of the dead-letter queue of the source queue's redrive policy (worker-queue output dlq_arn): the function sends permanent failures and failed last attempts there. Required: null is refused (see max_receive_count)."
  type        = string

  validation {
    condition     = var.dlq_arn == null ? true : can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]+$", var.dlq_arn))
    error_message = "dlq_arn (\"${var.dlq_arn == null ? "null" : var.dlq_arn}\") must be the ARN of one SQS queue, without wildcards."
  }
}

variable "fifo_queue" {
  description = "Whether the source queue is a FIFO queue (worker-queue output fifo_queue)."
  type        = bool
  default     = false
}

# Read only by validations (the module checks it against its own settings).
# tflint-ignore: terraform_unused_declarations
variable "queue_visibility_timeout_seconds" {
  description = "Visibility timeout of the source queue (worker-queue output visibility_timeout_seconds). Must be at least 6 x timeout + maximum_batching_window_in_seconds."
  type        = number

  validation {
    condition     = var.queue_visibility_timeout_seconds >= 6 * var.timeout + var.maximum_batching_window_in_seconds && var.queue_visibility_timeout_seconds <= 43200
    error_message = "queue_visibility_timeout_seconds (${var.queue_visibility_timeout_seconds}) must be at least 6 x timeout + maximum_batching_window_in_seconds = 6 x ${var.timeout} + ${var.maximum_batching_window_in_seconds} = ${6 * var.timeout + var.maximum_batching_window_in_seconds} s (AWS guidance for SQS event sources; at most 43200): with less, a message becomes visible again while its batch is still running or being retried after a throttle, and is processed twice or sent to the dead-letter queue. Raise the queue's visibility_timeout_seconds or lower the function timeout."
  }
}

# Read only by validations (the module checks it against its own settings).
# tflint-ignore: terraform_unused_declarations
variable "max_receive_count" {
  description = "maxReceiveCount of the source queue's redrive policy (worker-queue output max_receive_count). Must be at least 5 for a Lambda consumer. Null (a queue without a redrive policy) is refused: the mapping reports batch item failures."
  type        = number

  validation {
    condition     = var.max_receive_count == null ? true : var.max_receive_count >= 5
    error_message = "max_receive_count (${var.max_receive_count == null ? "null" : var.max_receive_count}) must be at least 5 for a Lambda consumer (AWS guidance): throttled invocations and batch retries use up receives, so with fewer a valid message reaches the dead-letter queue without ever running."
  }

  validation {
    condition     = var.max_receive_count != null && var.dlq_arn != null
    error_message = "partial batch responses need a redrive policy on the queue (max_receive_count ${var.max_receive_count == null ? "null" : var.max_receive_count}, dlq_arn ${var.dlq_arn == null ? "null" : var.dlq_arn}): the event source mapping always reports batch item failures, and with them Lambda does not scale down on failures; poison records would retry until the queue's retention ends. Give the queue a dead-letter queue (the worker-queue module always does) and pass its max_receive_count and dlq_arn."
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

################################################################################
# Idempotency table (from the idempotency-table module's outputs)
################################################################################

variable "idempotency_table_arn" {
  description = "ARN of the idempotency table (GetItem, PutItem, UpdateItem and DeleteItem are granted on it only). Null when the function does not use one."
  type        = string
  default     = null

  validation {
    condition     = var.idempotency_table_arn == null ? true : can(regex("^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:[0-9]{12}:table/[A-Za-z0-9_.-]+$", var.idempotency_table_arn))
    error_message = "idempotency_table_arn (\"${var.idempotency_table_arn == null ? "null" : var.idempotency_table_arn}\") must be the ARN of one DynamoDB table, without wildcards."
  }
}

################################################################################
# Event source mapping
################################################################################

variable "enabled" {
  description = "Whether the event source mapping polls the queue."
  type        = bool
  default     = true
}

variable "batch_size" {
  description = "Most messages per invocation: 1-10 when maximum_batching_window_in_seconds is 0 or the queue is FIFO, up to 10000 otherwise."
  type        = number
  default     = 10

  validation {
    condition     = var.batch_size >= 1 && var.batch_size <= (var.maximum_batching_window_in_seconds == 0 || var.fifo_queue ? 10 : 10000)
    error_message = "batch_size (${var.batch_size}) must be from 1 to ${var.maximum_batching_window_in_seconds == 0 || var.fifo_queue ? 10 : 10000}: SQS event sources take at most 10 messages per batch when maximum_batching_window_in_seconds is 0 (here ${var.maximum_batching_window_in_seconds}) or the queue is FIFO (here ${var.fifo_queue}), and at most 10000 with a batching window of 1 s or more."
  }
}

variable "maximum_batching_window_in_seconds" {
  description = "How long the event source mapping gathers messages before invoking, in seconds (0 to 300; 0 for FIFO queues). It adds to the visibility timeout the queue needs."
  type        = number
  default     = 0

  validation {
    condition     = var.maximum_batching_window_in_seconds >= 0 && var.maximum_batching_window_in_seconds <= (var.fifo_queue ? 0 : 300)
    error_message = "maximum_batching_window_in_seconds (${var.maximum_batching_window_in_seconds}) must be from 0 to ${var.fifo_queue ? 0 : 300}: 300 s is Lambda's limit, and FIFO queues (fifo_queue = ${var.fifo_queue}) take no batching window."
  }
}

variable "maximum_concurrency" {
  description = "Most concurrent invocations the event source mapping makes (scaling_config.maximum_concurrency, 2 to 1000). The way to limit a consumer's concurrency in standard mode; null leaves it unlimited. Not allowed together with provisioned mode (minimum_pollers, maximum_pollers)."
  type        = number
  default     = null

  validation {
    condition     = var.maximum_concurrency == null ? true : var.maximum_concurrency >= 2 && var.maximum_concurrency <= 1000 && floor(var.maximum_concurrency) == var.maximum_concurrency
    error_message = "maximum_concurrency (${var.maximum_concurrency == null ? "null" : var.maximum_concurrency}) must be a whole number from 2 to 1000, the range of the event source mapping's scaling_config."
  }

  validation {
    condition     = var.maximum_concurrency == null || (var.minimum_pollers == null && var.maximum_pollers == null)
    error_message = "maximum_concurrency (${var.maximum_concurrency == null ? "null" : var.maximum_concurrency}) cannot be set together with provisioned mode (minimum_pollers ${var.minimum_pollers == null ? "null" : var.minimum_pollers}, maximum_pollers ${var.maximum_pollers == null ? "null" : var.maximum_pollers}): AWS does not allow an SQS event source mapping both scaling_config.maximum_concurrency and provisioned_poller_config (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html). In provisioned mode concurrency follows the event pollers, up to 10 concurrent invocations each: limit it with maximum_pollers and leave maximum_concurrency null."
  }
}

variable "minimum_pollers" {
  description = "Provisioned mode of the event source mapping (provisioned_poller_config.minimum_pollers): the fewest event pollers kept ready, a whole number from 2 to 200 for an SQS source (AWS's default 2). Setting minimum_pollers or maximum_pollers turns provisioned mode on, which excludes maximum_concurrency; each SQS event poller handles up to 1 MB/s, 10 concurrent invocations or 10 polls a second, and is billed while provisioned. Null for both leaves the mapping in standard mode."
  type        = number
  default     = null

  validation {
    condition     = var.minimum_pollers == null ? true : var.minimum_pollers >= 2 && var.minimum_pollers <= 200 && floor(var.minimum_pollers) == var.minimum_pollers
    error_message = "minimum_pollers (${var.minimum_pollers == null ? "null" : var.minimum_pollers}) must be a whole number from 2 to 200, the range of provisioned_poller_config.minimum_pollers for an SQS event source mapping (Lambda API reference, ProvisionedPollerConfig)."
  }
}

variable "maximum_pollers" {
  description = "Provisioned mode of the event source mapping (provisioned_poller_config.maximum_pollers): the most event pollers it scales up to, a whole number from 2 to 10000 for an SQS source (AWS's default 200), at least minimum_pollers. It bounds the mapping's concurrency in provisioned mode (up to 10 concurrent invocations per poller). Null leaves AWS's default when minimum_pollers is set."
  type        = number
  default     = null

  validation {
    condition     = var.maximum_pollers == null ? true : var.maximum_pollers >= 2 && var.maximum_pollers <= 10000 && floor(var.maximum_pollers) == var.maximum_pollers
    error_message = "maximum_pollers (${var.maximum_pollers == null ? "null" : var.maximum_pollers}) must be a whole number from 2 to 10000, the range of provisioned_poller_config.maximum_pollers for an SQS event source mapping (Lambda API reference, ProvisionedPollerConfig)."
  }

  validation {
    condition     = var.maximum_pollers == null || var.minimum_pollers == null ? true : var.maximum_pollers >= var.minimum_pollers
    error_message = "maximum_pollers (${var.maximum_pollers == null ? "null" : var.maximum_pollers}) must be at least minimum_pollers (${var.minimum_pollers == null ? "null" : var.minimum_pollers}): the event source mapping cannot scale down to more event pollers than it may scale up to."
  }
}

variable "event_source_mapping_metrics" {
  description = "Metrics the event source mapping publishes to CloudWatch (metrics_config.metrics): [\"EventCount\"] (the default) for the counts of the events it processed, filtered out or dropped (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html#event-source-mapping-metrics), or [] for none. EventCount is the one value for an SQS source (ErrorCount and KafkaMetrics are for Kafka sources)."
  type        = list(string)
  default     = ["EventCount"]

  validation {
    condition     = alltrue([for metric in var.event_source_mapping_metrics : metric == "EventCount"]) && length(distinct(var.event_source_mapping_metrics)) == length(var.event_source_mapping_metrics)
    error_message = "event_source_mapping_metrics (${join(", ", var.event_source_mapping_metrics)}) may hold only \"EventCount\", once, or nothing: EventCount is the one metrics_config value for an SQS event source mapping (ErrorCount and KafkaMetrics are for Kafka sources)."
  }
}

################################################################################
# Alarms (rules checked in modules/alarms)
################################################################################

variable "create_alarms" {
  description = "Whether to create the CloudWatch alarms on the function's Errors and Throttles."
  type        = bool
  default     = true
}

variable "lambda_errors_threshold" {
  description = "Alarm when the function's Errors exceed this count in a period. Errors are invocations that failed as a whole (crash, timeout, out of memory); failed batch items are reported, not errors."
  type        = number
  default     = 0
}

variable "lambda_throttles_threshold" {
  description = "Alarm when the function's Throttles exceed this count in a period."
  type        = number
  default     = 0
}

variable "alarm_period_seconds" {
  description = "Period of the alarms, in seconds (a multiple of 60)."
  type        = number
  default     = 60
}

variable "alarm_evaluation_periods" {
  description = "Number of periods an alarm condition must hold before the alarm fires."
  type        = number
  default     = 1
}

variable "alarm_actions" {
  description = "ARNs notified when an alarm fires and when it returns to OK, for example worker-queue's alarm_actions output."
  type        = list(string)
  default     = []
}
