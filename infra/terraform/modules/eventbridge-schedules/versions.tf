terraform {
  # 1.9, as the other modules (their validations refer to other variables).
  required_version = ">= 1.9"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # The same range as the other modules.
      version = ">= 5.100, < 7.0"
    }
  }
}
