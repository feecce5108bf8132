provider "aws" {
  region = var.region
}

locals {
  lambda_zip = coalesce(var.lambda_zip, "${path.root}/../../../../dist/bootstrap-arm64.zip")

  # The numbers the Lambda rules tie together: visibility >= 6 x timeout + batching window.
  function_timeout         = 30
  batching_window_seconds  = 10
  queue_visibility_timeout = 6 * local.function_timeout + local.batching_window_seconds # 190 s

  tags = {
    Project = "sqsworker"
    Example = "lambda-only"
  }
}

module "queue" {
  source = "../../modules/worker-queue"

  name                       = "webhook-lambda-deliveries"
  visibility_timeout_seconds = local.queue_visibility_timeout
  max_receive_count          = 5

  tags = local.tags
}

module "idempotency_table" {
  source = "../../modules/idempotency-table"

  name = "webhook-lambda-idempotency"

  tags = local.tags
}

module "lambda_consumer" {
  source = "../../modules/lambda-consumer"

  function_name = "webhook-lambda-consumer"
  filename      = local.lambda_zip
  timeout       = local.function_timeout

  # With a batching window, batches may hold up to 10000 messages (here 100).
  batch_size                         = 100
  maximum_batching_window_in_seconds = local.batching_window_seconds
  maximum_concurrency                = 10

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

  tags = local.tags
}
