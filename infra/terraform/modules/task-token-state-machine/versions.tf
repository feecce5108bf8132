terraform {
  # 1.9 is the first Terraform (and OpenTofu) release whose variable validations may refer
  # to other variables; the validations in variables.tf need it.
  required_version = ">= 1.9"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.100, < 7.0"
    }
  }
}
