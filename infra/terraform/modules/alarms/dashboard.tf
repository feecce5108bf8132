# The dashboard body and the failure-rate expression. They refer only to variables and to
# local.region and local.alarm_arns (main.tf), so the tests can evaluate this file without
# a provider, offline and with the terraform CLI (infra/terraform/alarms_test.go).

locals {
  # 100 x (receives not followed by a delete) / receives, 0 in quiet periods.
  failure_rate_expression = "IF(received >= ${var.failure_rate_min_received}, 100 * (received - deleted) / received, 0)"

  dashboard_functions = distinct(concat(var.function_name == null ? [] : [var.function_name], var.dashboard_function_names))

  # Every widget is 12 wide and 6 high, two to a row; CloudWatch places widgets without x
  # and y in order, left to right.
  # A for over zero or one name: a conditional cannot choose between tuples of different
  # lengths.
  queue_names = var.queue_name == null ? [] : [var.queue_name]
  dlq_names   = var.dlq_name == null ? [] : [var.dlq_name]
  outbox_lags = var.outbox_lag_metric_namespace == null ? [] : [[var.outbox_lag_metric_namespace, var.outbox_lag_metric_name]]

  queue_widgets = flatten([for name in local.queue_names : [
    {
      type = "metric", width = 12, height = 6
      properties = {
        title = "${name}: messages", region = local.region, stat = "Maximum", period = 60, view = "timeSeries"
        metrics = [
          ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", name, { label = "visible" }],
          ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", name, { label = "in flight" }],
          ["AWS/SQS", "ApproximateNumberOfMessagesDelayed", "QueueName", name, { label = "delayed" }],
        ]
      }
    },
    {
      type = "metric", width = 12, height = 6
      properties = {
        title = "${name}: age of oldest message (s)", region = local.region, stat = "Maximum", period = 60, view = "timeSeries"
        metrics = [
          ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", name, { label = "oldest" }],
        ]
        annotations = { horizontal = [{ label = "alarm", value = var.oldest_message_age_threshold_seconds }] }
      }
    },
    {
      type = "metric", width = 12, height = 6
      properties = {
        title = "${name}: throughput and failure rate", region = local.region, stat = "Sum", period = 60, view = "timeSeries"
        metrics = [
          ["AWS/SQS", "NumberOfMessagesSent", "QueueName", name, { label = "sent" }],
          ["AWS/SQS", "NumberOfMessagesReceived", "QueueName", name, { id = "received", label = "received" }],
          ["AWS/SQS", "NumberOfMessagesDeleted", "QueueName", name, { id = "deleted", label = "deleted" }],
          [{ expression = local.failure_rate_expression, label = "failure rate (%)", id = "failure_rate", yAxis = "right" }],
        ]
      }
    },
  ]])

  dlq_widgets = [for name in local.dlq_names :
    {
      type = "metric", width = 12, height = 6
      properties = {
        title = "${name}: dead-letter messages", region = local.region, stat = "Maximum", period = 60, view = "timeSeries"
        metrics = [
          ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", name, { label = "visible" }],
          ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", name, { label = "oldest (s)", yAxis = "right" }],
        ]
      }
    }
  ]

  function_widgets = [
    for name in local.dashboard_functions : {
      type = "metric", width = 12, height = 6
      properties = {
        title = "${name}: invocations", region = local.region, stat = "Sum", period = 60, view = "timeSeries"
        metrics = [
          ["AWS/Lambda", "Invocations", "FunctionName", name],
          ["AWS/Lambda", "Errors", "FunctionName", name],
          ["AWS/Lambda", "Throttles", "FunctionName", name],
          ["AWS/Lambda", "Duration", "FunctionName", name, { stat = "p99", label = "duration p99 (ms)", yAxis = "right" }],
        ]
      }
    }
  ]

  outbox_widgets = [for metric in local.outbox_lags :
    {
      type = "metric", width = 12, height = 6
      properties = {
        title = "outbox lag (s)", region = local.region, stat = "Maximum", period = 60, view = "timeSeries"
        metrics = [
          concat(metric, flatten([for key, value in var.outbox_lag_metric_dimensions : [key, value]])),
        ]
        annotations = { horizontal = [{ label = "alarm", value = var.outbox_lag_threshold_seconds }] }
      }
    }
  ]

  alarm_widgets = [for arns in(length(local.alarm_arns) == 0 ? [] : [local.alarm_arns]) :
    {
      type       = "alarm", width = 24, height = 3
      properties = { title = "Alarms", alarms = arns }
    }
  ]

  dashboard_body = jsonencode({
    widgets = concat(local.alarm_widgets, local.queue_widgets, local.dlq_widgets, local.function_widgets, local.outbox_widgets)
  })
}
