variable "region" {
  description = "AWS region to deploy to."
  type        = string
  default     = "us-east-1"
}

variable "image" {
  description = "Image of the poller built from the repository's Dockerfile, for example ACCOUNT.dkr.ecr.REGION.amazonaws.com/webhook:TAG (arm64)."
  type        = string
}

variable "ecr_repository_arn" {
  description = "ARN of the ECR repository holding the image (the execution role may pull from it only). Null for images outside ECR."
  type        = string
  default     = null
}

variable "subnet_ids" {
  description = "Private subnets of the poller tasks, with a route to SQS, DynamoDB, ECR and CloudWatch Logs (NAT gateway or VPC endpoints)."
  type        = list(string)
}

variable "security_group_ids" {
  description = "Security groups of the poller tasks (outbound HTTPS only)."
  type        = list(string)
  default     = []
}

variable "lambda_zip" {
  description = "Path of the Lambda deployment package. Defaults to dist/bootstrap-arm64.zip at the repository root (built by `make lambda`)."
  type        = string
  default     = null
}

variable "alarm_actions" {
  description = "Extra ARNs notified by the queue alarms, besides the SNS topic the example creates."
  type        = list(string)
  default     = []
}
