# sqsworker: make demo runs the main job on the local emulator; make test runs every test.
SHELL := /bin/bash
GO ?= go
GOTESTFLAGS ?= -race -count=1 -timeout 20m

EMULATOR_ENV = eval "$$(localstack/env)"

.PHONY: up down test demo vet

## up: install (once) and start the local AWS emulator (SQS on :4566, DynamoDB on :4567)
up:
	localstack/up

## down: stop the emulator started by up
down:
	localstack/down

## test: start the emulator when needed, then run every test (unit and emulator)
test: up
	$(EMULATOR_ENV) && $(GO) test $(GOTESTFLAGS) ./...

## demo: the webhook-delivery worker end to end on the emulator; prints the summary line
demo: up
	$(EMULATOR_ENV) && $(GO) run ./examples/webhook/demo

vet:
	$(GO) vet ./...
