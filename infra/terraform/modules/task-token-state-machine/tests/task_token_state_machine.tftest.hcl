# Offline (mock_provider): the module's validations refuse bad configurations, and each
# side's policy grants only what it needs. Run by make tf-validate.
mock_provider "aws" {
  mock_data "aws_iam_policy_document" {
    defaults = {
      json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
    }
  }
  mock_data "aws_caller_identity" {
    defaults = {
      account_id = "123456789012"
    }
  }
}

variables {
  name              = "orders-saga"
  worker_queue_arns = ["arn:aws:sqs:us-east-1:123456789012:orders"]
  definition        = "{\"StartAt\":\"Charge\",\"States\":{\"Charge\":{\"Type\":\"Task\",\"Resource\":\"arn:aws:states:::sqs:sendMessage.waitForTaskToken\",\"HeartbeatSeconds\":60,\"Parameters\":{\"QueueUrl\":\"https://sqs.us-east-1.amazonaws.com/123456789012/orders\",\"MessageBody\":{\"taskToken.$\":\"$$.Task.Token\"}},\"End\":true}}}"
}

run "least_privilege_on_both_sides" {
  command = plan

  assert {
    condition     = toset(data.aws_iam_policy_document.worker[0].statement[0].actions) == toset(["states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"])
    error_message = "the worker's policy should grant the three task-token answers and nothing else"
  }
  assert {
    condition     = length(data.aws_iam_policy_document.worker[0].statement) == 1
    error_message = "the worker's policy should have one statement"
  }
  assert {
    condition     = toset(data.aws_iam_policy_document.state_machine[0].statement[0].actions) == toset(["sqs:SendMessage"])
    error_message = "the state machine's role should only send messages"
  }
  assert {
    condition     = toset(data.aws_iam_policy_document.state_machine[0].statement[0].resources) == toset(["arn:aws:sqs:us-east-1:123456789012:orders"])
    error_message = "the state machine's role should send to the worker queues only"
  }
  assert {
    condition     = length(data.aws_iam_policy_document.state_machine[0].statement) == 1
    error_message = "without KMS keys or logging the state machine's role should have one statement"
  }
  assert {
    condition     = aws_sfn_state_machine.this[0].type == "STANDARD"
    error_message = "the callback pattern needs a standard workflow"
  }
  assert {
    condition     = length(data.aws_iam_policy_document.assume[0].statement[0].condition) == 1 && alltrue([for c in data.aws_iam_policy_document.assume[0].statement[0].condition : c.variable == "aws:SourceAccount" && toset(c.values) == toset(["123456789012"])])
    error_message = "the role's trust policy should be limited to this account's Step Functions (aws:SourceAccount)"
  }
}

run "kms_keys_add_only_their_statement" {
  command = plan
  variables {
    queue_kms_key_arns = ["arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"]
  }

  assert {
    condition     = toset(data.aws_iam_policy_document.state_machine[0].statement[1].actions) == toset(["kms:GenerateDataKey", "kms:Decrypt"])
    error_message = "an SSE-KMS queue's key should get GenerateDataKey and Decrypt"
  }
}

run "create_false_creates_nothing" {
  command = plan
  variables {
    create = false
  }

  assert {
    condition     = output.state_machine_arn == null && output.worker_policy_json == null
    error_message = "create = false should leave the outputs null"
  }
}

run "definition_without_a_task_token_job_is_refused" {
  command = plan
  variables {
    definition = "{\"StartAt\":\"P\",\"States\":{\"P\":{\"Type\":\"Pass\",\"End\":true}}}"
  }
  expect_failures = [var.definition]
}

run "definition_that_is_not_json_is_refused" {
  command = plan
  variables {
    definition = "StartAt: Job (arn:aws:states:::sqs:sendMessage.waitForTaskToken)"
  }
  expect_failures = [var.definition]
}

run "wildcard_queue_arn_is_refused" {
  command = plan
  variables {
    worker_queue_arns = ["arn:aws:sqs:us-east-1:123456789012:*"]
  }
  expect_failures = [var.worker_queue_arns]
}

run "no_queue_is_refused" {
  command = plan
  variables {
    worker_queue_arns = []
  }
  expect_failures = [var.worker_queue_arns]
}

run "key_alias_is_refused" {
  command = plan
  variables {
    queue_kms_key_arns = ["arn:aws:kms:us-east-1:123456789012:alias/orders"]
  }
  expect_failures = [var.queue_kms_key_arns]
}

run "long_name_is_refused" {
  command = plan
  variables {
    name = "a-name-that-is-far-too-long-for-a-state-machine-role-name-of-64-chars"
  }
  expect_failures = [var.name]
}
