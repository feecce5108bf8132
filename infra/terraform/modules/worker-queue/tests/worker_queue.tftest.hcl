# Offline (mock_provider): the module's validations refuse bad configurations and its outputs
# echo what it was given. Run by make tf-validate.
mock_provider "aws" {
  # Policy documents feed JSON attributes the provider checks even when mocked.
  mock_data "aws_iam_policy_document" {
    defaults = {
      json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
    }
  }
}

# AWS provider 5.x accepts at most 262144 bytes (SQS's limit before August 2025); 6.8 and
# later accept the 1 MiB default. These runs pass on both.
variables {
  name             = "orders"
  max_message_size = 262144
}

run "defaults_plan_and_echo_outputs" {
  command = plan

  assert {
    condition     = output.max_message_size == 262144
    error_message = "max_message_size output should echo 262144"
  }
  assert {
    condition     = output.max_receive_count == 5
    error_message = "max_receive_count output should be the default 5"
  }
  assert {
    condition     = output.fifo_queue == false
    error_message = "fifo_queue output should be false by default"
  }
}

run "fifo_suffix_on_standard_queue_is_refused" {
  command = plan
  variables {
    name = "orders.fifo"
  }
  expect_failures = [var.name]
}

run "message_size_above_one_mib_is_refused" {
  command = plan
  variables {
    max_message_size = 1048577
  }
  expect_failures = [var.max_message_size]
}

run "dlq_retention_not_longer_than_queue_is_refused" {
  command = plan
  variables {
    message_retention_seconds     = 1209600
    dlq_message_retention_seconds = 1209600
  }
  expect_failures = [var.dlq_message_retention_seconds]
}
