locals {
  role_name      = coalesce(var.role_name, var.function_name)
  log_group_name = "/aws/lambda/${var.function_name}"

  # The module's variables come last so callers cannot point the function elsewhere by accident.
  environment = merge(
    var.environment_variables,
    var.queue_url == null ? {} : { SQSWORKER_QUEUE_URL = var.queue_url },
  )
}

################################################################################
# Function
################################################################################

resource "aws_lambda_function" "this" {
  count = var.create ? 1 : 0

  function_name = var.function_name
  description   = var.description
  role          = aws_iam_role.this[0].arn

  # The zip from `make lambda`: a static Go binary named bootstrap for the OS-only runtime.
  runtime          = "provided.al2023"
  architectures    = var.architectures
  handler          = "bootstrap"
  filename         = var.filename
  source_code_hash = filebase64sha256(var.filename)

  timeout                        = var.timeout
  memory_size                    = var.memory_size
  reserved_concurrent_executions = coalesce(var.reserved_concurrent_executions, -1)

  dynamic "environment" {
    for_each = length(local.environment) > 0 ? [local.environment] : []

    content {
      variables = environment.value
    }
  }

  logging_config {
    log_format = "JSON"
    log_group  = aws_cloudwatch_log_group.this[0].name
  }

  tags = var.tags

  depends_on = [aws_iam_role_policy.this]
}

resource "aws_cloudwatch_log_group" "this" {
  count = var.create ? 1 : 0

  name              = local.log_group_name
  retention_in_days = var.log_retention_in_days
  kms_key_id        = var.log_group_kms_key_arn

  tags = var.tags
}

################################################################################
# Event source mapping
################################################################################

resource "aws_lambda_event_source_mapping" "this" {
  count = var.create ? 1 : 0

  event_source_arn = var.queue_arn
  function_name    = aws_lambda_function.this[0].arn
  enabled          = var.enabled

  batch_size                         = var.batch_size
  maximum_batching_window_in_seconds = var.fifo_queue ? null : var.maximum_batching_window_in_seconds

  # Always on, deliberately not a variable: the handler reports the failed messages of a
  # batch, and only those are retried. Without it one failure retries the whole batch.
  function_response_types = ["ReportBatchItemFailures"]

  # Standard mode: Lambda scales the pollers, maximum_concurrency caps the invocations.
  dynamic "scaling_config" {
    for_each = var.maximum_concurrency == null ? [] : [var.maximum_concurrency]

    content {
      maximum_concurrency = scaling_config.value
    }
  }

  # Provisioned mode: minimum and maximum event pollers (a null one takes AWS's default).
  # The variables' validations refuse it together with maximum_concurrency, as AWS does.
  dynamic "provisioned_poller_config" {
    for_each = var.minimum_pollers == null && var.maximum_pollers == null ? [] : [{ minimum = var.minimum_pollers, maximum = var.maximum_pollers }]

    content {
      minimum_pollers = provisioned_poller_config.value.minimum
      maximum_pollers = provisioned_poller_config.value.maximum
    }
  }

  dynamic "metrics_config" {
    for_each = length(var.event_source_mapping_metrics) == 0 ? [] : [var.event_source_mapping_metrics]

    content {
      metrics = metrics_config.value
    }
  }

  tags = var.tags

  # The mapping checks the role's SQS permissions when it is created.
  depends_on = [aws_iam_role_policy.this]
}

################################################################################
# IAM (least privilege: this queue, its dead-letter queue, this table, this log group)
################################################################################

data "aws_iam_policy_document" "assume_role" {
  count = var.create ? 1 : 0

  statement {
    sid     = "LambdaAssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "this" {
  count = var.create ? 1 : 0

  name               = local.role_name
  assume_role_policy = data.aws_iam_policy_document.assume_role[0].json

  tags = var.tags
}

module "worker_permissions" {
  source = "../worker-permissions"
  count  = var.create ? 1 : 0

  queue_arn             = var.queue_arn
  dlq_arn               = var.dlq_arn
  idempotency_table_arn = var.idempotency_table_arn
  kms_key_arns          = var.kms_key_arns
}

# The worker's permissions (module worker-permissions) plus this function's log group.
data "aws_iam_policy_document" "this" {
  count = var.create ? 1 : 0

  source_policy_documents = [module.worker_permissions[0].json]

  statement {
    sid    = "WriteLogs"
    effect = "Allow"
    actions = [
      "logs:CreateLogStream",
      "logs:PutLogEvents",
    ]
    resources = ["${aws_cloudwatch_log_group.this[0].arn}:*"]
  }
}

resource "aws_iam_role_policy" "this" {
  count = var.create ? 1 : 0

  name   = "${local.role_name}-consumer"
  role   = aws_iam_role.this[0].id
  policy = data.aws_iam_policy_document.this[0].json
}

################################################################################
# Alarms (written once, in modules/alarms)
################################################################################

module "alarms" {
  source = "../alarms"
  count  = var.create ? 1 : 0

  create_alarms = var.create_alarms
  function_name = var.function_name

  lambda_errors_threshold    = var.lambda_errors_threshold
  lambda_throttles_threshold = var.lambda_throttles_threshold

  alarm_period_seconds     = var.alarm_period_seconds
  alarm_evaluation_periods = var.alarm_evaluation_periods
  alarm_actions            = var.alarm_actions

  tags = var.tags
}
