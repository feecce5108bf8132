data "aws_region" "current" {}

data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

locals {
  cluster_name   = element(split("/", var.cluster_arn), 1)
  queue_name     = element(split(":", var.queue_arn), 5)
  log_group_name = "/ecs/${var.name}"

  # The image's binary serves its own health check (distroless has no shell or curl).
  health_check_command = ["CMD", "/webhook", "healthcheck"]
  # Where the worker serves GET /healthz for that command (loopback only: the check runs
  # inside the container).
  health_address = "127.0.0.1:8080"

  # The module's variables come last so callers cannot point the worker elsewhere by accident.
  environment = merge(
    var.environment_variables,
    {
      SQSWORKER_QUEUE_URL      = var.queue_url
      SQSWORKER_STOP_TIMEOUT   = "${var.stop_timeout_seconds}s"
      SQSWORKER_HEALTH_ADDRESS = local.health_address
    },
    var.drain_timeout_seconds == null ? {} : { SQSWORKER_DRAIN_TIMEOUT = "${var.drain_timeout_seconds}s" },
  )

  container_definition = merge(
    {
      name                   = var.container_name
      image                  = var.image
      essential              = true
      readonlyRootFilesystem = true
      # ECS sends SIGKILL this long after SIGTERM; the worker knows it
      # (SQSWORKER_STOP_TIMEOUT), drains until 5 s before it and exits before it.
      stopTimeout = var.stop_timeout_seconds
      environment = [for key in sort(keys(local.environment)) : { name = key, value = local.environment[key] }]
      healthCheck = {
        command     = local.health_check_command
        interval    = 30
        timeout     = 5
        retries     = 3
        startPeriod = 10
      }
      logConfiguration = {
        logDriver = "awslogs"
        options = {
          awslogs-group         = local.log_group_name
          awslogs-region        = data.aws_region.current.id
          awslogs-stream-prefix = var.container_name
        }
      }
    },
    var.command == null ? {} : { command = var.command },
  )
}

################################################################################
# Service
################################################################################

resource "aws_ecs_service" "this" {
  count = var.create ? 1 : 0

  name             = var.name
  cluster          = var.cluster_arn
  task_definition  = aws_ecs_task_definition.this[0].arn
  desired_count    = var.min_tasks
  launch_type      = "FARGATE"
  platform_version = var.platform_version
  propagate_tags   = "SERVICE"

  deployment_minimum_healthy_percent = 100
  deployment_maximum_percent         = 200

  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }

  network_configuration {
    subnets          = var.subnet_ids
    security_groups  = var.security_group_ids
    assign_public_ip = var.assign_public_ip
  }

  tags = var.tags

  lifecycle {
    # The autoscaling policy owns the task count after creation.
    ignore_changes = [desired_count]
  }

  depends_on = [aws_iam_role_policy.task]
}

resource "aws_ecs_task_definition" "this" {
  count = var.create ? 1 : 0

  family                   = var.name
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = var.cpu
  memory                   = var.memory
  execution_role_arn       = aws_iam_role.execution[0].arn
  task_role_arn            = aws_iam_role.task[0].arn

  runtime_platform {
    operating_system_family = "LINUX"
    cpu_architecture        = var.cpu_architecture
  }

  container_definitions = jsonencode([local.container_definition])

  tags = var.tags
}

resource "aws_cloudwatch_log_group" "this" {
  count = var.create ? 1 : 0

  name              = local.log_group_name
  retention_in_days = var.log_retention_in_days
  kms_key_id        = var.log_group_kms_key_arn

  tags = var.tags
}

################################################################################
# Autoscaling: target tracking on backlog per task
################################################################################

resource "aws_appautoscaling_target" "this" {
  count = var.create ? 1 : 0

  service_namespace  = "ecs"
  scalable_dimension = "ecs:service:DesiredCount"
  resource_id        = "service/${local.cluster_name}/${aws_ecs_service.this[0].name}"
  min_capacity       = var.min_tasks
  max_capacity       = var.max_tasks

  tags = var.tags
}

# Backlog per task = ApproximateNumberOfMessagesVisible / RunningTaskCount (metric math),
# kept near target_backlog_per_task, as AWS recommends for scaling on SQS.
resource "aws_appautoscaling_policy" "backlog_per_task" {
  count = var.create ? 1 : 0

  name               = "${var.name}-backlog-per-task"
  policy_type        = "TargetTrackingScaling"
  service_namespace  = aws_appautoscaling_target.this[0].service_namespace
  scalable_dimension = aws_appautoscaling_target.this[0].scalable_dimension
  resource_id        = aws_appautoscaling_target.this[0].resource_id

  target_tracking_scaling_policy_configuration {
    target_value       = var.target_backlog_per_task
    scale_in_cooldown  = var.scale_in_cooldown_seconds
    scale_out_cooldown = var.scale_out_cooldown_seconds

    customized_metric_specification {
      metrics {
        id          = "visible"
        label       = "Messages waiting in ${local.queue_name}"
        return_data = false

        metric_stat {
          stat = "Average"

          metric {
            namespace   = "AWS/SQS"
            metric_name = "ApproximateNumberOfMessagesVisible"

            dimensions {
              name  = "QueueName"
              value = local.queue_name
            }
          }
        }
      }

      metrics {
        id          = "tasks"
        label       = "Running tasks of ${var.name}"
        return_data = false

        metric_stat {
          stat = "Average"

          metric {
            namespace   = "ECS/ContainerInsights"
            metric_name = "RunningTaskCount"

            dimensions {
              name  = "ClusterName"
              value = local.cluster_name
            }

            dimensions {
              name  = "ServiceName"
              value = var.name
            }
          }
        }
      }

      metrics {
        id          = "backlog_per_task"
        label       = "Visible messages per running task"
        expression  = "visible / tasks"
        return_data = true
      }
    }
  }
}

################################################################################
# IAM: task role (least privilege: this queue, its dead-letter queue, this table)
################################################################################

data "aws_iam_policy_document" "assume_role" {
  count = var.create ? 1 : 0

  statement {
    sid     = "EcsTasksAssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }

    # Only tasks of this account may assume the roles (confused deputy protection).
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }

    condition {
      test     = "ArnLike"
      variable = "aws:SourceArn"
      values   = ["arn:${data.aws_partition.current.partition}:ecs:${data.aws_region.current.id}:${data.aws_caller_identity.current.account_id}:*"]
    }
  }
}

resource "aws_iam_role" "task" {
  count = var.create ? 1 : 0

  name               = "${var.name}-task"
  assume_role_policy = data.aws_iam_policy_document.assume_role[0].json

  tags = var.tags
}

# The task role's policy is the worker's permissions, written once in worker-permissions.
module "worker_permissions" {
  source = "../worker-permissions"
  count  = var.create ? 1 : 0

  queue_arn             = var.queue_arn
  dlq_arn               = var.dlq_arn
  idempotency_table_arn = var.idempotency_table_arn
  kms_key_arns          = var.kms_key_arns
}

resource "aws_iam_role_policy" "task" {
  count = var.create ? 1 : 0

  name   = "${var.name}-consumer"
  role   = aws_iam_role.task[0].id
  policy = module.worker_permissions[0].json
}

################################################################################
# IAM: execution role (pull the image, write the logs)
################################################################################

resource "aws_iam_role" "execution" {
  count = var.create ? 1 : 0

  name               = "${var.name}-execution"
  assume_role_policy = data.aws_iam_policy_document.assume_role[0].json

  tags = var.tags
}

data "aws_iam_policy_document" "execution" {
  count = var.create ? 1 : 0

  dynamic "statement" {
    for_each = var.ecr_repository_arn == null ? [] : [1]

    content {
      sid    = "PullImage"
      effect = "Allow"
      actions = [
        "ecr:BatchCheckLayerAvailability",
        "ecr:BatchGetImage",
        "ecr:GetDownloadUrlForLayer",
      ]
      resources = [var.ecr_repository_arn]
    }
  }

  # ecr:GetAuthorizationToken supports no resource-level permissions: "*" is the only
  # resource AWS accepts for it. It grants a registry login, not access to any repository.
  dynamic "statement" {
    for_each = var.ecr_repository_arn == null ? [] : [1]

    content {
      sid       = "RegistryLogin"
      effect    = "Allow"
      actions   = ["ecr:GetAuthorizationToken"]
      resources = ["*"]
    }
  }

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

resource "aws_iam_role_policy" "execution" {
  count = var.create ? 1 : 0

  name   = "${var.name}-execution"
  role   = aws_iam_role.execution[0].id
  policy = data.aws_iam_policy_document.execution[0].json
}
