locals {
  # Attribute names the runtime's idempotency records use (package idempotency; the key
  # and the TTL attribute are package table's, shared by unique jobs and the scheduler).
  # Only the key and the TTL attribute matter to DynamoDB's schema; the others are listed
  # for the outputs. A test compares every name with the Go constants.
  attribute_names = {
    key                  = var.hash_key
    status               = "status"
    expiration           = var.ttl_attribute_name
    in_progress_expiry   = "in_progress_expiry"
    in_progress_deadline = "in_progress_deadline"
    lease                = "lease"
    validation           = "validation"
    data                 = "data"
  }
}

################################################################################
# Table
################################################################################

resource "aws_dynamodb_table" "this" {
  count = var.create ? 1 : 0

  name         = var.name
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = var.hash_key

  attribute {
    name = var.hash_key
    type = "S"
  }

  # Records expire through TTL on epoch seconds; the runtime also ignores records whose
  # expiration has passed, because TTL deletes them only eventually.
  ttl {
    attribute_name = var.ttl_attribute_name
    enabled        = true
  }

  point_in_time_recovery {
    enabled = var.point_in_time_recovery_enabled
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = var.kms_key_arn
  }

  deletion_protection_enabled = var.deletion_protection_enabled

  tags = var.tags
}
