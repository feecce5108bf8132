variable "tags" {
  description = "Tags added to every resource the module creates."
  type        = map(string)
  default     = {}
}

variable "name" {
  description = "Name of the schedule group and prefix of the execution role (\"<name>-scheduler\")."
  type        = string

  validation {
    condition     = can(regex("^[0-9A-Za-z._-]{1,54}$", var.name))
    error_message = "name (\"${var.name}\") must be 1-54 characters of A-Z, a-z, 0-9, '.', '_' and '-' (a schedule group name, and the role name with \"-scheduler\" within IAM's 64)."
  }
}

################################################################################
# Schedules: the container scheduler's definition file
################################################################################

variable "schedules_json" {
  description = "The schedule definition file the container scheduler reads (scheduler.ReadSchedules): {\"schedules\": [{\"name\", \"cron\", \"time_zone\", \"job_type\", \"payload\", \"queue\", \"jitter\", ...}]}, for example file(\"schedules.json\"). cron is five fields with day-of-week names (MON-FRI), \"@every <n>m\" or \"<n>h\", or @hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually; jitter becomes a flexible time window of whole minutes; catch_up and group_id are the container's only."
  type        = string

  validation {
    condition     = try(length(jsondecode(var.schedules_json).schedules) > 0, false)
    error_message = "schedules_json must be the schedule definition file: a JSON object {\"schedules\": [...]} with at least one schedule."
  }

  validation {
    condition     = alltrue([for s in try(jsondecode(var.schedules_json).schedules, []) : can(regex("^[0-9A-Za-z._-]{1,64}$", s.name))])
    error_message = "Schedule names must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-' (EventBridge Scheduler's rule, and the container scheduler's); invalid: ${join(", ", [for i, s in try(jsondecode(var.schedules_json).schedules, []) : try(jsonencode(s.name), "schedule ${i} (no name)") if !can(regex("^[0-9A-Za-z._-]{1,64}$", s.name))])}."
  }

  validation {
    condition     = length(distinct([for s in try(jsondecode(var.schedules_json).schedules, []) : try(s.name, "")])) == length(try(jsondecode(var.schedules_json).schedules, []))
    error_message = "Schedule names must be unique (a tick's id is its schedule's name and time): ${join(", ", [for s in try(jsondecode(var.schedules_json).schedules, []) : try(s.name, "")])}."
  }

  validation {
    condition = alltrue([for s in try(jsondecode(var.schedules_json).schedules, []) : (
      contains(["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"], try(trimspace(s.cron), "")) ||
      can(regex("^@every [1-9][0-9]*[mh]$", trimspace(s.cron))) ||
      (can(regex("^\\S+\\s+\\S+\\s+\\S+\\s+\\S+\\s+[^\\s0-9]+$", trimspace(s.cron))) && can(regex("^\\S+\\s+\\S+\\s+[*?]\\s|\\s[*?]$", trimspace(s.cron))))
    )])
    error_message = "EventBridge Scheduler cannot run these cron expressions as written: ${join(", ", [for s in try(jsondecode(var.schedules_json).schedules, []) : "${try(s.name, "?")} (${try(jsonencode(s.cron), "none")})" if !(contains(["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"], try(trimspace(s.cron), "")) || can(regex("^@every [1-9][0-9]*[mh]$", trimspace(s.cron))) || (can(regex("^\\S+\\s+\\S+\\s+\\S+\\s+\\S+\\s+[^\\s0-9]+$", trimspace(s.cron))) && can(regex("^\\S+\\s+\\S+\\s+[*?]\\s|\\s[*?]$", trimspace(s.cron)))))])}. Use five fields (no seconds) with day-of-week names (MON-FRI: EventBridge numbers days 1-7 from Sunday, cron 0-6) and at most one of day-of-month and day-of-week restricted, \"@every <n>m\" or \"@every <n>h\", or a descriptor such as @daily."
  }

  validation {
    condition     = alltrue([for s in try(jsondecode(var.schedules_json).schedules, []) : can(regex("^.+$", s.job_type)) && can(merge(try(s.payload, {}), {}))])
    error_message = "Every schedule needs a non-empty job_type and a payload that is a JSON object (or none); invalid: ${join(", ", [for s in try(jsondecode(var.schedules_json).schedules, []) : try(s.name, "?") if !(can(regex("^.+$", s.job_type)) && can(merge(try(s.payload, {}), {})))])}."
  }

  validation {
    condition     = alltrue([for s in try(jsondecode(var.schedules_json).schedules, []) : can(regex("^([0-9]+)(s|m|h)$", try(s.jitter, "0s"))) && try(regex("^([0-9]+)(s|m|h)$", s.jitter)[0] * { s = 1, m = 60, h = 3600 }[regex("^([0-9]+)(s|m|h)$", s.jitter)[1]] <= 86400, true)])
    error_message = "jitter must be a whole number of s, m or h (\"90s\", \"5m\"), at most 24h (EventBridge's flexible time window is 1 to 1440 minutes); invalid: ${join(", ", [for s in try(jsondecode(var.schedules_json).schedules, []) : "${try(s.name, "?")} (${try(jsonencode(s.jitter), "")})" if !(can(regex("^([0-9]+)(s|m|h)$", try(s.jitter, "0s"))) && try(regex("^([0-9]+)(s|m|h)$", s.jitter)[0] * { s = 1, m = 60, h = 3600 }[regex("^([0-9]+)(s|m|h)$", s.jitter)[1]] <= 86400, true))])}."
  }

  validation {
    condition     = !can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]+$", var.queue_arn)) || alltrue([for s in try(jsondecode(var.schedules_json).schedules, []) : contains(["", regex("[^:]*$", var.queue_arn)], try(regex("[^/:]*$", s.queue), ""))])
    error_message = "Every schedule's queue must be this module's target queue \"${regex("[^:]*$", var.queue_arn)}\" (its name or URL; one module per queue); others: ${join(", ", [for s in try(jsondecode(var.schedules_json).schedules, []) : "${try(s.name, "?")} (${try(s.queue, "")})" if !contains(["", regex("[^:]*$", var.queue_arn)], try(regex("[^/:]*$", s.queue), ""))])}."
  }
}

################################################################################
# Target
################################################################################

variable "queue_arn" {
  description = "ARN of the standard queue the schedules send to (worker-queue output queue_arn)."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]+$", var.queue_arn))
    error_message = "queue_arn (\"${var.queue_arn}\") must be the ARN of one standard SQS queue, without wildcards. FIFO queues are not supported: EventBridge Scheduler sets no deduplication id, and content-based deduplication would drop a tick whose body equals one sent within 5 minutes; use the container scheduler for FIFO queues."
  }
}

variable "dead_letter_queue_arn" {
  description = "ARN of the queue that receives the events EventBridge Scheduler could not deliver after its retries (the target's dead-letter queue). Use its own queue, not the worker's dead-letter queue: these are Scheduler's failure records, not jobs."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]+$", var.dead_letter_queue_arn)) && var.dead_letter_queue_arn != var.queue_arn
    error_message = "dead_letter_queue_arn (\"${var.dead_letter_queue_arn}\") must be the ARN of one standard SQS queue, without wildcards, other than queue_arn."
  }
}

variable "maximum_retry_attempts" {
  description = "How often EventBridge Scheduler retries a failed send (0-185; EventBridge's default is 185)."
  type        = number
  default     = 185

  validation {
    condition     = var.maximum_retry_attempts >= 0 && var.maximum_retry_attempts <= 185 && floor(var.maximum_retry_attempts) == var.maximum_retry_attempts
    error_message = "maximum_retry_attempts (${var.maximum_retry_attempts}) must be a whole number from 0 to 185."
  }
}

variable "maximum_event_age_in_seconds" {
  description = "How long EventBridge Scheduler keeps retrying a tick, in seconds (60-86400); after that it goes to the dead-letter queue."
  type        = number
  default     = 86400

  validation {
    condition     = var.maximum_event_age_in_seconds >= 60 && var.maximum_event_age_in_seconds <= 86400 && floor(var.maximum_event_age_in_seconds) == var.maximum_event_age_in_seconds
    error_message = "maximum_event_age_in_seconds (${var.maximum_event_age_in_seconds}) must be a whole number from 60 to 86400."
  }
}

variable "kms_key_arns" {
  description = "ARNs of the customer managed KMS keys of the queue and the dead-letter queue, if any (kms:GenerateDataKey and kms:Decrypt are granted on them only). Leave empty with SSE-SQS."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.kms_key_arns : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[0-9a-f-]+$", arn))])
    error_message = "kms_key_arns (${join(", ", var.kms_key_arns)}) must be ARNs of KMS keys, without wildcards or aliases."
  }
}

################################################################################
# Alarm (rules checked in modules/alarms)
################################################################################

variable "create_alarms" {
  description = "Whether to alarm when dead_letter_queue_arn's queue holds any message (a tick Scheduler could not deliver). Turn it off when that queue already has the alarm, for example when it is a worker-queue's dead-letter queue."
  type        = bool
  default     = true
}

variable "alarm_period_seconds" {
  description = "Period of the alarm, in seconds (a multiple of 60)."
  type        = number
  default     = 60
}

variable "alarm_evaluation_periods" {
  description = "Number of periods the alarm condition must hold before the alarm fires."
  type        = number
  default     = 1
}

variable "alarm_actions" {
  description = "ARNs notified when the alarm fires and when it returns to OK, for example worker-queue's alarm_actions output."
  type        = list(string)
  default     = []
}
