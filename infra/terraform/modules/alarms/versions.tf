terraform {
  # 1.9, as the other modules (their validations refer to other variables).
  required_version = ">= 1.9"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # The same range as the other modules.
      version = ">= 6.8, < 7.0"
    }
  }
}
