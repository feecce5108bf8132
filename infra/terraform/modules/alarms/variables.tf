variable "create" {
  description = "Whether to create any resources in this module (alarms, the optional SNS topic and dashboard)."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to every resource the module creates."
  type        = map(string)
  default     = {}
}

variable "create_alarms" {
  description = "Whether to create the alarms; false keeps only the optional SNS topic and dashboard."
  type        = bool
  default     = true
}

################################################################################
# What is watched (each alarm exists only when its input is set)
################################################################################

variable "queue_name" {
  description = "Name of the source queue: alarms on the age of its oldest message and on the failure rate. Null for none."
  type        = string
  default     = null
}

variable "dlq_name" {
  description = "Name of the dead-letter queue: alarm when it holds any message. Null for none."
  type        = string
  default     = null
}

variable "function_name" {
  description = "Name of a Lambda consumer: alarms on its Errors and Throttles. Null for none."
  type        = string
  default     = null
}

################################################################################
# Thresholds
################################################################################

variable "oldest_message_age_threshold_seconds" {
  description = "Alarm when the source queue's ApproximateAgeOfOldestMessage exceeds this many seconds."
  type        = number
  default     = 900

  validation {
    condition     = var.oldest_message_age_threshold_seconds > 0
    error_message = "oldest_message_age_threshold_seconds (${var.oldest_message_age_threshold_seconds}) must be greater than 0."
  }
}

variable "failure_rate_threshold_percent" {
  description = "Alarm when more than this percentage of the source queue's receives in a period end without a delete (100 x (NumberOfMessagesReceived - NumberOfMessagesDeleted) / NumberOfMessagesReceived): retried and abandoned deliveries. Null turns the alarm off."
  type        = number
  default     = 10

  validation {
    condition     = var.failure_rate_threshold_percent == null ? true : var.failure_rate_threshold_percent > 0 && var.failure_rate_threshold_percent < 100
    error_message = "failure_rate_threshold_percent (${var.failure_rate_threshold_percent == null ? "null" : var.failure_rate_threshold_percent}) must be greater than 0 and less than 100 (a percentage of receives), or null for no failure-rate alarm."
  }
}

variable "failure_rate_min_received" {
  description = "The failure rate counts as 0 in a period with fewer receives than this, so one failed message of two does not page anyone."
  type        = number
  default     = 10

  validation {
    condition     = var.failure_rate_min_received >= 1 && floor(var.failure_rate_min_received) == var.failure_rate_min_received
    error_message = "failure_rate_min_received (${var.failure_rate_min_received}) must be a whole number of at least 1."
  }
}

variable "lambda_errors_threshold" {
  description = "Alarm when the function's Errors (invocations that failed as a whole: crash, timeout, out of memory; failed batch items are not errors) exceed this count in a period."
  type        = number
  default     = 0

  validation {
    condition     = var.lambda_errors_threshold >= 0
    error_message = "lambda_errors_threshold (${var.lambda_errors_threshold}) must be 0 or more."
  }
}

variable "lambda_throttles_threshold" {
  description = "Alarm when the function's Throttles exceed this count in a period (reserved concurrency below the event source mapping's maximum_concurrency throttles)."
  type        = number
  default     = 0

  validation {
    condition     = var.lambda_throttles_threshold >= 0
    error_message = "lambda_throttles_threshold (${var.lambda_throttles_threshold}) must be 0 or more."
  }
}

################################################################################
# Outbox lag (a metric the outbox relay publishes; the module does not know its name)
################################################################################

variable "outbox_lag_metric_namespace" {
  description = "CloudWatch namespace of the outbox relay's lag metric (seconds between writing an outbox record and sending it). Null for no outbox-lag alarm."
  type        = string
  default     = null

  validation {
    condition     = var.outbox_lag_metric_namespace == null ? var.outbox_lag_metric_name == null : var.outbox_lag_metric_name != null && !startswith(var.outbox_lag_metric_namespace, "AWS/")
    error_message = "outbox_lag_metric_namespace (${var.outbox_lag_metric_namespace == null ? "null" : var.outbox_lag_metric_namespace}) and outbox_lag_metric_name (${var.outbox_lag_metric_name == null ? "null" : var.outbox_lag_metric_name}) must be set together, and the namespace is the relay's own (not one starting with \"AWS/\")."
  }
}

variable "outbox_lag_metric_name" {
  description = "Name of the outbox relay's lag metric, in seconds. Set together with outbox_lag_metric_namespace."
  type        = string
  default     = null
}

variable "outbox_lag_metric_dimensions" {
  description = "Dimensions of the outbox lag metric, exactly as the relay publishes them (CloudWatch matches every dimension)."
  type        = map(string)
  default     = {}
}

variable "outbox_lag_threshold_seconds" {
  description = "Alarm when the outbox lag (statistic Maximum) exceeds this many seconds."
  type        = number
  default     = 300

  validation {
    condition     = var.outbox_lag_threshold_seconds > 0
    error_message = "outbox_lag_threshold_seconds (${var.outbox_lag_threshold_seconds}) must be greater than 0."
  }
}

################################################################################
# Evaluation and actions
################################################################################

variable "alarm_period_seconds" {
  description = "Period of the alarms, in seconds. SQS publishes its metrics once a minute."
  type        = number
  default     = 60

  validation {
    condition     = var.alarm_period_seconds >= 60 && var.alarm_period_seconds % 60 == 0
    error_message = "alarm_period_seconds (${var.alarm_period_seconds}) must be a multiple of 60: SQS publishes its metrics once a minute."
  }
}

variable "alarm_evaluation_periods" {
  description = "Number of periods an alarm condition must hold before the alarm fires."
  type        = number
  default     = 1

  validation {
    condition     = var.alarm_evaluation_periods >= 1
    error_message = "alarm_evaluation_periods (${var.alarm_evaluation_periods}) must be at least 1."
  }
}

variable "alarm_actions" {
  description = "ARNs notified when an alarm fires and when it returns to OK (for example an existing SNS topic). The topic from create_sns_topic is added."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.alarm_actions : startswith(arn, "arn:")])
    error_message = "alarm_actions (${join(", ", var.alarm_actions)}) must all be ARNs (\"arn:...\"), for example of an SNS topic."
  }
}

variable "create_sns_topic" {
  description = "Whether to create an SNS topic for the alarms (named sns_topic_name)."
  type        = bool
  default     = false
}

variable "sns_topic_name" {
  description = "Name of the SNS topic; required when create_sns_topic is true."
  type        = string
  default     = null

  validation {
    condition     = !var.create_sns_topic || var.sns_topic_name != null
    error_message = "sns_topic_name must be set when create_sns_topic is true."
  }
}

variable "sns_topic_kms_master_key_id" {
  description = "KMS key of the SNS topic. Leave null or use a customer managed key whose policy lets cloudwatch.amazonaws.com use it: alarms cannot publish to a topic encrypted with the AWS managed key alias/aws/sns."
  type        = string
  default     = null
}

################################################################################
# Dashboard
################################################################################

variable "create_dashboard" {
  description = "Whether to create a CloudWatch dashboard of the watched queue, dead-letter queue, functions, outbox lag and alarm states."
  type        = bool
  default     = false
}

variable "dashboard_name" {
  description = "Name of the dashboard; required when create_dashboard is true. Letters, digits, \"-\" and \"_\", at most 255 characters."
  type        = string
  default     = null

  validation {
    condition     = var.dashboard_name == null ? !var.create_dashboard : can(regex("^[A-Za-z0-9_-]{1,255}$", var.dashboard_name))
    error_message = "dashboard_name (${var.dashboard_name == null ? "null" : var.dashboard_name}) must be set when create_dashboard is true, with 1-255 letters, digits, \"-\" or \"_\"."
  }
}

variable "dashboard_function_names" {
  description = "More Lambda functions shown on the dashboard (no alarms), besides function_name."
  type        = list(string)
  default     = []
}
