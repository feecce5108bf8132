variable "create" {
  description = "Whether to create any resources in this module (the state machine, its role and the worker's policy document)."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to every resource the module creates."
  type        = map(string)
  default     = {}
}

variable "name" {
  description = "Name of the state machine; its execution role is named \"<name>-state-machine\"."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,64}$", var.name))
    error_message = "name (\"${var.name}\") must be 1-64 characters of A-Z, a-z, 0-9, '-' and '_' (a state machine name fits 80; the role name adds 14)."
  }
}

variable "definition" {
  description = "The state machine's Amazon States Language definition (JSON). Its task states send jobs with arn:aws:states:::sqs:sendMessage.waitForTaskToken to the queues of worker_queue_arns, each with HeartbeatSeconds (see README.md)."
  type        = string

  validation {
    condition     = can(jsondecode(var.definition))
    error_message = "definition must be JSON (an Amazon States Language document)."
  }

  validation {
    condition     = can(regex("sqs:sendMessage\\.waitForTaskToken", var.definition))
    error_message = "definition has no task state with the resource arn:aws:states:::sqs:sendMessage.waitForTaskToken: this module is for task-token jobs."
  }
}

variable "worker_queue_arns" {
  description = "ARNs of the worker queues the state machine sends task-token jobs to (worker-queue output queue_arn): its role may sqs:SendMessage to these only."
  type        = list(string)

  validation {
    condition     = length(var.worker_queue_arns) > 0 && alltrue([for arn in var.worker_queue_arns : can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]+$", arn))])
    error_message = "worker_queue_arns must list at least one ARN of one SQS queue each, without wildcards."
  }
}

variable "queue_kms_key_arns" {
  description = "ARNs of the KMS keys of queues encrypted with SSE-KMS (the state machine's role gets kms:GenerateDataKey and kms:Decrypt on them to send). Empty for SSE-SQS or no encryption."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.queue_kms_key_arns : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", arn))])
    error_message = "queue_kms_key_arns must be ARNs of KMS keys (arn:...:kms:REGION:ACCOUNT:key/ID), without wildcards or aliases."
  }
}
