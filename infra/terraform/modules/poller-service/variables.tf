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
# Service
################################################################################

variable "name" {
  description = "Name of the ECS service, the task definition family and the prefix of the IAM roles."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,48}$", var.name))
    error_message = "name (\"${var.name}\") must be 1-48 characters of A-Z, a-z, 0-9, '-' and '_' (it prefixes the IAM role names, which allow 64)."
  }
}

variable "cluster_arn" {
  description = "ARN of the ECS cluster. Enable Container Insights on it: the autoscaling policy reads RunningTaskCount from ECS/ContainerInsights."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:ecs:[a-z0-9-]+:[0-9]{12}:cluster/[A-Za-z0-9_-]+$", var.cluster_arn))
    error_message = "cluster_arn (\"${var.cluster_arn}\") must be the ARN of one ECS cluster (arn:aws:ecs:REGION:ACCOUNT:cluster/NAME)."
  }
}

variable "subnet_ids" {
  description = "Subnets of the tasks (private subnets with a NAT gateway or VPC endpoints for SQS, DynamoDB, ECR and CloudWatch Logs)."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) > 0
    error_message = "subnet_ids must name at least one subnet (got ${length(var.subnet_ids)})."
  }
}

variable "security_group_ids" {
  description = "Security groups of the tasks. The worker only makes outbound HTTPS calls; it listens on no port."
  type        = list(string)
  default     = []
}

variable "assign_public_ip" {
  description = "Whether the tasks get a public IP (only for public subnets without NAT)."
  type        = bool
  default     = false
}

variable "platform_version" {
  description = "Fargate platform version."
  type        = string
  default     = "LATEST"
}

################################################################################
# Task definition
################################################################################

variable "image" {
  description = "Container image of the poller, built from the repository's Dockerfile (for example ACCOUNT.dkr.ecr.REGION.amazonaws.com/webhook:TAG)."
  type        = string
}

variable "ecr_repository_arn" {
  description = "ARN of the ECR repository holding the image; the execution role may pull from it only. Null for images outside ECR."
  type        = string
  default     = null

  validation {
    condition     = var.ecr_repository_arn == null ? true : can(regex("^arn:aws[a-z-]*:ecr:[a-z0-9-]+:[0-9]{12}:repository/[a-z0-9._/-]+$", var.ecr_repository_arn))
    error_message = "ecr_repository_arn (\"${var.ecr_repository_arn == null ? "null" : var.ecr_repository_arn}\") must be the ARN of one ECR repository, without wildcards."
  }
}

variable "command" {
  description = "Arguments passed to the image's entrypoint (/webhook). Null keeps the image's default."
  type        = list(string)
  default     = null
}

variable "container_name" {
  description = "Name of the container in the task definition."
  type        = string
  default     = "worker"
}

variable "cpu" {
  description = "CPU units of the task (256 = 0.25 vCPU)."
  type        = number
  default     = 256

  validation {
    condition     = contains([256, 512, 1024, 2048, 4096, 8192, 16384], var.cpu)
    error_message = "cpu (${var.cpu}) must be one of Fargate's sizes: 256, 512, 1024, 2048, 4096, 8192 or 16384."
  }
}

variable "memory" {
  description = "Memory of the task, in MiB; it must fit the cpu size (Fargate's table)."
  type        = number
  default     = 512

  validation {
    condition     = var.memory >= 512 && var.memory <= 122880
    error_message = "memory (${var.memory}) must be from 512 to 122880 MiB, Fargate's range."
  }
}

variable "cpu_architecture" {
  description = "CPU architecture of the tasks: ARM64 (Graviton, the same architecture as the Lambda build) or X86_64. The image must be built for it (docker buildx --platform linux/arm64)."
  type        = string
  default     = "ARM64"

  validation {
    condition     = contains(["ARM64", "X86_64"], var.cpu_architecture)
    error_message = "cpu_architecture (\"${var.cpu_architecture}\") must be ARM64 or X86_64."
  }
}

variable "environment_variables" {
  description = "Environment variables of the worker: the handler's own settings (the webhook example reads SQSWORKER_IDEMPOTENCY_TABLE). SQSWORKER_QUEUE_URL, SQSWORKER_STOP_TIMEOUT, SQSWORKER_DRAIN_TIMEOUT (when drain_timeout_seconds is set) and SQSWORKER_HEALTH_ADDRESS are set by the module."
  type        = map(string)
  default     = {}
}

variable "stop_timeout_seconds" {
  description = "Container stopTimeout: seconds ECS waits after SIGTERM before SIGKILL (at most 120 on Fargate). The module passes it to the worker as SQSWORKER_STOP_TIMEOUT: the worker drains until 5 s before it (after its drain deadline it gives cancelled handlers 1 s, poller's cancelGrace, and flushes its last deletes for up to 3 s, poller's finalFlushTimeout, plus 1 s of slack) and exits before it."
  type        = number
  default     = 30

  validation {
    condition     = var.stop_timeout_seconds <= 120 && floor(var.stop_timeout_seconds) == var.stop_timeout_seconds
    error_message = "stop_timeout_seconds (${var.stop_timeout_seconds}) must be a whole number of seconds, and Fargate allows at most 120s: a larger stopTimeout fails the deployment."
  }

  validation {
    # 5 = poller's cancelGrace (1 s) + finalFlushTimeout (3 s) + 1 s; stoptimeout_test.go
    # (TestStopTimeoutMarginMatchesThePoller) checks it against the Go constants.
    condition     = var.drain_timeout_seconds == null ? var.stop_timeout_seconds >= 5 + 1 : var.stop_timeout_seconds >= var.drain_timeout_seconds + 5
    error_message = "stop_timeout_seconds (${var.stop_timeout_seconds}) must be at least ${var.drain_timeout_seconds == null ? "6 (1 s of drain + 5)" : "drain_timeout_seconds (${var.drain_timeout_seconds}) + 5"}: ECS kills the container stopTimeout seconds after SIGTERM, and after the drain deadline the worker still needs 1 s of grace for cancelled handlers and up to 3 s for its final delete flush (+1 s slack). Killed earlier, handled messages whose deletes were not sent come back, and in-flight ones stay invisible for the whole visibility timeout."
  }
}

variable "drain_timeout_seconds" {
  description = "The worker's drain deadline after SIGTERM, in seconds (SQSWORKER_DRAIN_TIMEOUT, passed as a Go duration such as \"25s\"). Null (the default) lets the worker derive it from the stop timeout: stop_timeout_seconds - 5. In-flight messages still running at the deadline are released for other workers."
  type        = number
  default     = null

  validation {
    condition     = var.drain_timeout_seconds == null ? true : var.drain_timeout_seconds >= 1 && var.drain_timeout_seconds <= 115 && floor(var.drain_timeout_seconds) == var.drain_timeout_seconds
    error_message = "drain_timeout_seconds (${var.drain_timeout_seconds == null ? "null" : var.drain_timeout_seconds}) must be null or a whole number from 1 to 115: it must end 5 s before stopTimeout, which Fargate caps at 120 s."
  }
}

variable "log_retention_in_days" {
  description = "Retention of the service's log group, in days."
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
# Queue and table (from the worker-queue and idempotency-table modules' outputs)
################################################################################

variable "queue_url" {
  description = "URL of the source queue (worker-queue output queue_url): SQSWORKER_QUEUE_URL."
  type        = string
}

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
  description = "ARN of the idempotency table (GetItem, PutItem, UpdateItem and DeleteItem are granted on it only). Null when the worker does not use one."
  type        = string
  default     = null

  validation {
    condition     = var.idempotency_table_arn == null ? true : can(regex("^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:[0-9]{12}:table/[A-Za-z0-9_.-]+$", var.idempotency_table_arn))
    error_message = "idempotency_table_arn (\"${var.idempotency_table_arn == null ? "null" : var.idempotency_table_arn}\") must be the ARN of one DynamoDB table, without wildcards."
  }
}

variable "kms_key_arns" {
  description = "ARNs of customer managed KMS keys of the queues and the table, if any (kms:Decrypt and kms:GenerateDataKey are granted on them only)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.kms_key_arns : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", arn))])
    error_message = "kms_key_arns (${join(", ", var.kms_key_arns)}) must hold KMS key ARNs (arn:aws:kms:REGION:ACCOUNT:key/ID), without wildcards or aliases."
  }
}

################################################################################
# Autoscaling (target tracking on backlog per task)
################################################################################

variable "min_tasks" {
  description = "Fewest running tasks. At least 1: backlog per task divides by the running task count, which has no data at 0."
  type        = number
  default     = 1

  validation {
    condition     = var.min_tasks >= 1 && floor(var.min_tasks) == var.min_tasks
    error_message = "min_tasks (${var.min_tasks}) must be a whole number of at least 1: the backlog-per-task metric divides by RunningTaskCount, so a service scaled to 0 never scales out again."
  }
}

variable "max_tasks" {
  description = "Most running tasks."
  type        = number
  default     = 10

  validation {
    condition     = var.max_tasks >= var.min_tasks && floor(var.max_tasks) == var.max_tasks
    error_message = "max_tasks (${var.max_tasks}) must be a whole number of at least min_tasks (${var.min_tasks})."
  }
}

variable "target_backlog_per_task" {
  description = "Visible messages per running task the autoscaling policy aims for: the longest acceptable queue delay divided by the average processing time per message, times the task's concurrency."
  type        = number
  default     = 100

  validation {
    condition     = var.target_backlog_per_task > 0
    error_message = "target_backlog_per_task (${var.target_backlog_per_task}) must be greater than 0."
  }
}

variable "scale_in_cooldown_seconds" {
  description = "Seconds after a scale-in before another scale-in."
  type        = number
  default     = 300
}

variable "scale_out_cooldown_seconds" {
  description = "Seconds after a scale-out before another scale-out."
  type        = number
  default     = 60
}
