locals {
  # Every payload object: the resource of the producers' and consumers' object grants.
  payload_objects_arn = "${aws_s3_bucket.this.arn}/${var.key_prefix}*"
}

################################################################################
# Bucket: private, encrypted, TLS only
################################################################################

resource "aws_s3_bucket" "this" {
  bucket        = var.name
  force_destroy = var.force_destroy

  tags = var.tags
}

resource "aws_s3_bucket_public_access_block" "this" {
  bucket = aws_s3_bucket.this.id

  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

# ACLs off: the bucket owner owns every object, access is by policy only.
resource "aws_s3_bucket_ownership_controls" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = var.kms_key_arn == null ? "AES256" : "aws:kms"
      kms_master_key_id = var.kms_key_arn
    }
    # An S3 Bucket Key cuts the KMS requests of SSE-KMS; it has no effect on SSE-S3.
    bucket_key_enabled = var.kms_key_arn != null
  }
}

# Deny every request without TLS, or with TLS older than 1.2 (S3 User Guide, "Enforcing
# encryption in transit with TLS1.2 or higher").
resource "aws_s3_bucket_policy" "this" {
  bucket = aws_s3_bucket.this.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "DenyInsecureTransport"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource  = [aws_s3_bucket.this.arn, "${aws_s3_bucket.this.arn}/*"]
        Condition = { Bool = { "aws:SecureTransport" = "false" } }
      },
      {
        Sid       = "DenyOutdatedTLS"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource  = [aws_s3_bucket.this.arn, "${aws_s3_bucket.this.arn}/*"]
        Condition = { NumericLessThan = { "s3:TlsVersion" = "1.2" } }
      },
    ]
  })

  # S3 rejects a policy while the public access block is being written.
  depends_on = [aws_s3_bucket_public_access_block.this]
}

################################################################################
# Lifecycle: the backstop for payloads no cleaner deletes
################################################################################

resource "aws_s3_bucket_lifecycle_configuration" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    id     = "expire-claim-check-payloads"
    status = "Enabled"

    filter {
      prefix = var.key_prefix
    }

    # Longer than the queue's and the dead-letter queue's retention together
    # (validated in variables.tf), so a message never outlives its payload.
    expiration {
      days = var.expiration_days
    }

    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }
}

################################################################################
# Least-privilege policies for the roles (attach them with aws_iam_role_policy).
# With SSE-KMS, the key's kms:GenerateDataKey and kms:Decrypt come from where every
# worker key grant is written: worker-permissions' kms_key_arns.
################################################################################

data "aws_iam_policy_document" "producer" {
  statement {
    sid       = "WritePayloads"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = [local.payload_objects_arn]
  }
}

data "aws_iam_policy_document" "consumer" {
  # GetObject for the resolver, DeleteObject for its cleaner (not needed on Lambda).
  statement {
    sid       = "ReadAndDeletePayloads"
    effect    = "Allow"
    actions   = ["s3:GetObject", "s3:DeleteObject"]
    resources = [local.payload_objects_arn]
  }

  # Without ListBucket S3 answers AccessDenied, not NoSuchKey, for a missing payload, and
  # the resolver retries it instead of reporting it as gone.
  statement {
    sid       = "ListPayloads"
    effect    = "Allow"
    actions   = ["s3:ListBucket"]
    resources = [aws_s3_bucket.this.arn]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${var.key_prefix}*"]
    }
  }
}
