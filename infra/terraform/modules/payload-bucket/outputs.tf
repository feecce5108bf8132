################################################################################
# Bucket
################################################################################

output "bucket_name" {
  description = "Name of the bucket: claimcheck.Config.Bucket, and the Bucket of the consumers' claimcheck.Location."
  value       = aws_s3_bucket.this.id
}

output "bucket_arn" {
  description = "ARN of the bucket."
  value       = aws_s3_bucket.this.arn
}

output "key_prefix" {
  description = "Key prefix of the payloads: claimcheck.Config.KeyPrefix, and the KeyPrefix of the consumers' claimcheck.Location."
  value       = var.key_prefix
}

output "expiration_days" {
  description = "Days after which the lifecycle rule deletes a payload."
  value       = var.expiration_days
}

################################################################################
# Policies
################################################################################

output "producer_policy_json" {
  description = "IAM policy for producers: s3:PutObject on the payload prefix. With SSE-KMS the producer also needs kms:GenerateDataKey on kms_key_arn."
  value       = data.aws_iam_policy_document.producer.json
}

output "consumer_policy_json" {
  description = "IAM policy for consumers: s3:GetObject and s3:DeleteObject on the payload prefix, s3:ListBucket limited to it (so a missing payload is NoSuchKey). With SSE-KMS, add kms_key_arn to worker-permissions' kms_key_arns (kms:Decrypt)."
  value       = data.aws_iam_policy_document.consumer.json
}
