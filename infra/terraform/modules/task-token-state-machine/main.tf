################################################################################
# A Step Functions state machine sending task-token jobs to sqsworker queues, with
# least-privilege IAM for both sides: the state machine's role may only send to the
# worker queues; the worker gets only the three task-token answers (package tasktoken).
################################################################################

data "aws_caller_identity" "current" {
  count = var.create ? 1 : 0
}

data "aws_iam_policy_document" "assume" {
  count = var.create ? 1 : 0

  statement {
    sid     = "StepFunctionsAssumes"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["states.amazonaws.com"]
    }
    # Confused-deputy guard (Step Functions Developer Guide, "Cross-service confused deputy
    # prevention"): only this account's Step Functions may assume the role.
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current[0].account_id]
    }
  }
}

resource "aws_iam_role" "state_machine" {
  count = var.create ? 1 : 0

  name               = "${var.name}-state-machine"
  assume_role_policy = data.aws_iam_policy_document.assume[0].json
  tags               = var.tags
}

data "aws_iam_policy_document" "state_machine" {
  count = var.create ? 1 : 0

  statement {
    sid       = "SendTaskTokenJobs"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = var.worker_queue_arns
  }

  dynamic "statement" {
    for_each = length(var.queue_kms_key_arns) > 0 ? [1] : []

    content {
      sid       = "EncryptJobs"
      effect    = "Allow"
      actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
      resources = var.queue_kms_key_arns
    }
  }
}

resource "aws_iam_role_policy" "state_machine" {
  count = var.create ? 1 : 0

  name   = "send-task-token-jobs"
  role   = aws_iam_role.state_machine[0].id
  policy = data.aws_iam_policy_document.state_machine[0].json
}

resource "aws_sfn_state_machine" "this" {
  count = var.create ? 1 : 0

  name       = var.name
  role_arn   = aws_iam_role.state_machine[0].arn
  definition = var.definition
  # The callback pattern (.waitForTaskToken) runs in standard workflows only.
  type = "STANDARD"
  tags = var.tags

  depends_on = [aws_iam_role_policy.state_machine]
}

################################################################################
# The worker's side: the task-token answers, for the worker's role (worker-permissions'
# document, or its own inline policy).
################################################################################

data "aws_iam_policy_document" "worker" {
  count = var.create ? 1 : 0

  statement {
    sid    = "AnswerTaskTokens"
    effect = "Allow"
    actions = [
      "states:SendTaskSuccess",
      "states:SendTaskFailure",
      "states:SendTaskHeartbeat",
    ]
    # The Service Authorization Reference lists no resource type for these actions (a
    # task token is not an ARN), so they cannot be narrowed to this state machine.
    resources = ["*"]
  }
}
