################################################################################
# The definition file, translated for EventBridge Scheduler
################################################################################

data "aws_caller_identity" "current" {}

locals {
  definitions = { for s in jsondecode(var.schedules_json).schedules : s.name => s }

  # robfig/cron descriptors as EventBridge cron expressions (minutes hours day-of-month
  # month day-of-week year; one of the day fields must be "?").
  descriptors = {
    "@yearly"   = "cron(0 0 1 1 ? *)"
    "@annually" = "cron(0 0 1 1 ? *)"
    "@monthly"  = "cron(0 0 1 * ? *)"
    "@weekly"   = "cron(0 0 ? * SUN *)"
    "@daily"    = "cron(0 0 * * ? *)"
    "@midnight" = "cron(0 0 * * ? *)"
    "@hourly"   = "cron(0 * * * ? *)"
  }

  # "@every 5m" -> rate(5 minutes); five fields -> cron(m h dom month dow *), with "?" in
  # the day field left unrestricted.
  expressions = { for name, s in local.definitions : name => (
    contains(keys(local.descriptors), trimspace(s.cron)) ? local.descriptors[trimspace(s.cron)] :
    can(regex("^@every ", trimspace(s.cron))) ? format("rate(%s %s%s)",
      regex("^@every ([0-9]+)([mh])$", trimspace(s.cron))[0],
      regex("^@every ([0-9]+)([mh])$", trimspace(s.cron))[1] == "m" ? "minute" : "hour",
      regex("^@every ([0-9]+)([mh])$", trimspace(s.cron))[0] == "1" ? "" : "s"
    ) :
    format("cron(%s %s %s %s %s *)",
      regexall("\\S+", s.cron)[0],
      regexall("\\S+", s.cron)[1],
      contains(["*", "?"], regexall("\\S+", s.cron)[4]) ? replace(regexall("\\S+", s.cron)[2], "?", "*") : "?",
      regexall("\\S+", s.cron)[3],
      contains(["*", "?"], regexall("\\S+", s.cron)[4]) ? "?" : regexall("\\S+", s.cron)[4]
    )
  ) }

  # jitter ("90s", "5m") -> a flexible time window of whole minutes, rounded up.
  window_minutes = { for name, s in local.definitions : name => (
    try(s.jitter, "0s") == "0s" ? 0 : ceil(
      regex("^([0-9]+)(s|m|h)$", s.jitter)[0] * { s = 1, m = 60, h = 3600 }[regex("^([0-9]+)(s|m|h)$", s.jitter)[1]] / 60
    )
  ) }

  # The message body: the payload with the job type in the field the ServeMux routes on
  # (sqsworker.RouteByJSONField(scheduler.JobTypeField)): an SQS target sets no message
  # attributes.
  inputs = { for name, s in local.definitions : name => jsonencode(merge(try(s.payload, {}), { job_type = s.job_type })) }
}

################################################################################
# Schedules
################################################################################

resource "aws_scheduler_schedule_group" "this" {
  name = var.name
  tags = var.tags
}

resource "aws_scheduler_schedule" "this" {
  for_each = local.definitions

  name       = each.key
  group_name = aws_scheduler_schedule_group.this.name

  schedule_expression          = local.expressions[each.key]
  schedule_expression_timezone = try(each.value.time_zone, "") == "" ? "UTC" : each.value.time_zone

  flexible_time_window {
    mode                      = local.window_minutes[each.key] > 0 ? "FLEXIBLE" : "OFF"
    maximum_window_in_minutes = local.window_minutes[each.key] > 0 ? local.window_minutes[each.key] : null
  }

  target {
    arn      = var.queue_arn
    role_arn = aws_iam_role.this.arn
    input    = local.inputs[each.key]

    retry_policy {
      maximum_event_age_in_seconds = var.maximum_event_age_in_seconds
      maximum_retry_attempts       = var.maximum_retry_attempts
    }

    dead_letter_config {
      arn = var.dead_letter_queue_arn
    }
  }
}

################################################################################
# Execution role: send to the queue and the dead-letter queue, nothing else
################################################################################

data "aws_iam_policy_document" "assume_role" {
  statement {
    sid     = "SchedulerAssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["scheduler.amazonaws.com"]
    }

    # Only schedules of this account may use the role (confused deputy).
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

data "aws_iam_policy_document" "this" {
  statement {
    sid       = "SendToQueue"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [var.queue_arn]
  }

  statement {
    sid       = "SendToDeadLetterQueue"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [var.dead_letter_queue_arn]
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

resource "aws_iam_role" "this" {
  name               = "${var.name}-scheduler"
  assume_role_policy = data.aws_iam_policy_document.assume_role.json

  tags = var.tags
}

resource "aws_iam_role_policy" "this" {
  name   = "send-to-queue"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.this.json
}

################################################################################
# Alarm (written once, in modules/alarms)
################################################################################

# A message in the target's dead-letter queue is a tick EventBridge Scheduler could not
# deliver after its retries: that job never reached the worker.
module "alarms" {
  source = "../alarms"

  create_alarms = var.create_alarms
  dlq_name      = element(split(":", var.dead_letter_queue_arn), 5)

  alarm_period_seconds     = var.alarm_period_seconds
  alarm_evaluation_periods = var.alarm_evaluation_periods
  alarm_actions            = var.alarm_actions

  tags = var.tags
}
