# Offline (mock_provider): the module's validations refuse bad configurations and its outputs
# echo what it was given. Run by make tf-validate, which sets TF_VAR_filename to a zip it
# writes (the module hashes the file at plan time).
mock_provider "aws" {
  # Policy documents feed JSON attributes the provider checks even when mocked.
  mock_data "aws_iam_policy_document" {
    defaults = {
      json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
    }
  }
}

variables {
  function_name                    = "orders-consumer"
  queue_arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
  dlq_arn                          = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
  queue_visibility_timeout_seconds = 180
  max_receive_count                = 5
}

run "defaults_to_arm64" {
  command = plan

  assert {
    condition     = length(output.architectures) == 1 && output.architectures[0] == "arm64"
    error_message = "architectures output should default to arm64"
  }
  assert {
    condition     = output.timeout == 30
    error_message = "timeout output should be the default 30"
  }
}

run "x86_64_is_accepted" {
  command = plan
  variables {
    architectures = ["x86_64"]
  }

  assert {
    condition     = length(output.architectures) == 1 && output.architectures[0] == "x86_64"
    error_message = "architectures output should echo x86_64"
  }
}

run "unknown_architecture_is_refused" {
  command = plan
  variables {
    architectures = ["amd64"]
  }
  expect_failures = [var.architectures]
}

run "two_architectures_are_refused" {
  command = plan
  variables {
    architectures = ["arm64", "x86_64"]
  }
  expect_failures = [var.architectures]
}

run "timeout_above_fifteen_minutes_is_refused" {
  command = plan
  variables {
    timeout = 901
  }
  expect_failures = [var.timeout]
}
