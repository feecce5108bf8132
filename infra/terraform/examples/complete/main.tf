provider "aws" {
  region = var.region
}

locals {
  lambda_zip = coalesce(var.lambda_zip, "${path.root}/../../../../dist/bootstrap-arm64.zip")

  tags = {
    Project = "sqsworker"
    Example = "complete"
  }
}

################################################################################
# Queue and dead-letter queue
################################################################################

# Names and settings match localstack/resources.json (the local emulator), and a test
# (infra/terraform/terraform_test.go) keeps the two in step. Keep the arguments literal.
module "queue" {
  source = "../../modules/worker-queue"

  name                          = "webhook-deliveries"
  fifo_queue                    = false
  visibility_timeout_seconds    = 30
  message_retention_seconds     = 345600
  receive_wait_time_seconds     = 20
  max_message_size              = 1048576
  max_receive_count             = 5
  dlq_name                      = "webhook-deliveries-dlq"
  dlq_message_retention_seconds = 1209600

  create_sns_topic = true
  alarm_actions    = var.alarm_actions

  create_dashboard         = true
  dashboard_function_names = ["webhook-deliveries-consumer"]

  tags = local.tags
}

################################################################################
# Idempotency table
################################################################################

module "idempotency_table" {
  source = "../../modules/idempotency-table"

  name               = "webhook-idempotency"
  hash_key           = "id"
  ttl_attribute_name = "expiration"

  tags = local.tags
}

################################################################################
# Lambda consumer
################################################################################

# The queue's visibility timeout is 30 s (as in the local emulator), and a Lambda consumer
# needs at least 6 x function timeout + batching window: 6 x 5 + 0 = 30. So the function
# times out after 5 s and gathers no batching window. For longer jobs raise the queue's
# visibility_timeout_seconds (and localstack/resources.json) together.
module "lambda_consumer" {
  source = "../../modules/lambda-consumer"

  function_name = "webhook-deliveries-consumer"
  filename      = local.lambda_zip
  timeout       = 5
  memory_size   = 256

  batch_size                         = 10
  maximum_batching_window_in_seconds = 0
  maximum_concurrency                = 5

  queue_arn                        = module.queue.queue_arn
  queue_url                        = module.queue.queue_url
  dlq_arn                          = module.queue.dlq_arn
  fifo_queue                       = module.queue.fifo_queue
  queue_visibility_timeout_seconds = module.queue.visibility_timeout_seconds
  max_receive_count                = module.queue.max_receive_count

  idempotency_table_arn = module.idempotency_table.table_arn
  # The webhook example's own setting; the modules set only the runtime's variables.
  environment_variables = {
    SQSWORKER_IDEMPOTENCY_TABLE = module.idempotency_table.table_name
  }

  # Errors and throttles notify the same topic as the queue alarms.
  alarm_actions = module.queue.alarm_actions

  tags = local.tags
}

################################################################################
# ECS poller
################################################################################

# Container Insights publishes RunningTaskCount, the divisor of the backlog-per-task metric.
resource "aws_ecs_cluster" "this" {
  name = "webhook"

  setting {
    name  = "containerInsights"
    value = "enabled"
  }

  tags = local.tags
}

# The poller and the Lambda consumer read the same queue here to show both hosts; they
# compete for messages and the idempotency table keeps each job to one run. A real
# deployment usually picks one host per queue.
module "poller" {
  source = "../../modules/poller-service"

  name               = "webhook-poller"
  cluster_arn        = aws_ecs_cluster.this.arn
  image              = var.image
  ecr_repository_arn = var.ecr_repository_arn
  subnet_ids         = var.subnet_ids
  security_group_ids = var.security_group_ids

  stop_timeout_seconds = 30 # the worker drains until 5 s before it (SQSWORKER_STOP_TIMEOUT)

  min_tasks               = 1
  max_tasks               = 10
  target_backlog_per_task = 100

  queue_url = module.queue.queue_url
  queue_arn = module.queue.queue_arn
  dlq_arn   = module.queue.dlq_arn

  idempotency_table_arn = module.idempotency_table.table_arn
  # The webhook example's own setting; the modules set only the runtime's variables.
  environment_variables = {
    SQSWORKER_IDEMPOTENCY_TABLE = module.idempotency_table.table_name
  }

  tags = local.tags
}
