################################################################################
# The worker's permissions: what the runtime calls (poller/api.go, lambda/options.go)
################################################################################

data "aws_iam_policy_document" "this" {
  count = var.create ? 1 : 0

  statement {
    sid    = "ConsumeSourceQueue"
    effect = "Allow"
    actions = [
      "sqs:ReceiveMessage",
      "sqs:DeleteMessage",
      "sqs:ChangeMessageVisibility",
      "sqs:GetQueueAttributes",
      "sqs:GetQueueUrl",
    ]
    resources = [var.queue_arn]
  }

  statement {
    sid    = "SendToDeadLetterQueue"
    effect = "Allow"
    actions = [
      "sqs:SendMessage",
      "sqs:GetQueueUrl",
    ]
    resources = [var.dlq_arn]
  }

  dynamic "statement" {
    for_each = var.idempotency_table_arn == null ? [] : [1]

    content {
      sid    = "IdempotencyTable"
      effect = "Allow"
      actions = [
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        # The ConditionCheck actions of TransactWriteItems (batches: a job's success counted
        # in its idempotency record's completion); a transaction's other actions need the
        # item actions above.
        "dynamodb:ConditionCheckItem",
      ]
      resources = [var.idempotency_table_arn]
    }
  }

  dynamic "statement" {
    for_each = length(var.kms_key_arns) > 0 ? [1] : []

    content {
      sid    = "EncryptionKeys"
      effect = "Allow"
      actions = [
        "kms:Decrypt",
        "kms:GenerateDataKey",
      ]
      resources = var.kms_key_arns
    }
  }

}
