variable "region" {
  description = "AWS region to deploy to."
  type        = string
  default     = "us-east-1"
}

variable "lambda_zip" {
  description = "Path of the Lambda deployment package. Defaults to dist/bootstrap-arm64.zip at the repository root (built by `make lambda`)."
  type        = string
  default     = null
}
