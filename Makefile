# sqsworker. A fresh machine needs two commands:
#   make demo   the webhook-delivery worker end to end on the local emulator
#   make test   every test (unit and emulator), on both SQS emulators
# Each installs and starts only what it uses, when it is not there yet: make demo the
# emulator (localstack/up: LocalStack SQS and moto), plus PostgreSQL with
# DEMO_STORE=postgres; make test everything (make up).
SHELL := /bin/bash
GO ?= go
# Emulator tests mostly wait on SQS, so they run many at a time even on 2 cores.
GOTESTFLAGS ?= -race -count=1 -timeout 30m -parallel 16

EMULATOR_ENV = eval "$$(localstack/env)"

LAMBDA_PKG ?= ./examples/webhook
LAMBDA_ARCHES ?= arm64 amd64
DIST ?= dist
IMAGE ?= sqsworker-webhook:dev

.PHONY: help up up-emulator down test test-localstack test-stress test-elasticmq demo vet license-check tidy tidy-check release-require release install-check footprint lambda lambda-build-check image tf-validate soak soak-ci bench bench-elasticmq bench-ci bench-go bench-outbox saturation fuzz ui-screenshots

## help: list these targets, each with what it does
help:
	@grep -E '^## [a-z-]+:' $(firstword $(MAKEFILE_LIST)) | sed 's/^## //'

## up: install (once) and start everything the tests use: the local AWS emulator (SQS on :4566, DynamoDB and S3 on :4567), PostgreSQL (:5433), and Prometheus and Chromium for their tests
up: up-emulator
	localstack/postgres-up
	localstack/prometheus-up
	localstack/chromium-up

## up-emulator: install (once) and start the local AWS emulator only (LocalStack SQS on :4566, moto DynamoDB and S3 on :4567): what the demo, the soak and the bench use
up-emulator:
	localstack/up

## down: stop the emulator started by up
down:
	localstack/down

# go test -json goes through internal/testing/testsummary: it prints the output of failed
# tests, one ok/FAIL line per package, one SKIP line per skipped test with its message and
# last "N passed, N failed[, N skipped]"; with
# pipefail its exit status (1 on any failure) is make's.
TESTSUMMARY = bin/testsummary

$(TESTSUMMARY): $(wildcard internal/testing/testsummary/*.go)
	$(GO) build -o $@ ./internal/testing/testsummary

## test: start every service when needed, then run every test on both SQS emulators: every package with SQS on LocalStack, then the emulator packages again with SQS on ElasticMQ (scripts/test); ends with a line summing up both lanes
# `work` is every package of every module in go.work (./... would stop at the nested go.mod
# files of cmd/sqsworker, infra/terraform, bench and examples/webhook).
test: up $(TESTSUMMARY)
	localstack/elasticmq-up
	GO=$(GO) GOTESTFLAGS='$(GOTESTFLAGS)' scripts/test both

## test-localstack: make test's first lane alone: every test, SQS on LocalStack
test-localstack: up $(TESTSUMMARY)
	GO=$(GO) GOTESTFLAGS='$(GOTESTFLAGS)' scripts/test localstack

# test-stress repeats the suite to find flaky tests (issue 9), then prints
# "test-stress: P of N runs passed" and fails unless all did:
#   1. unit level: every test that needs no emulator, $(STRESS_UNIT_FLAGS). A test is an
#      emulator test exactly when it asks internal/testing/testenv for a client; with
#      SQSWORKER_TEST_UNIT_ONLY=1 (and no endpoints) those skip, so no list is kept.
#   2. emulator packages (those whose tests import internal/testing/testenv or the outbox
#      conformance suite outbox/outboxtest, which runs on the emulator; from go list), run
#      STRESS_RUNS times in a row with GOTESTFLAGS, as make test runs them.
STRESS_UNIT_COUNT ?= 200
STRESS_RUNS ?= 5
STRESS_UNIT_FLAGS ?= -race -count=$(STRESS_UNIT_COUNT) -timeout 120m
EMULATOR_PKGS = GO=$(GO) scripts/test packages

## test-stress: unit tests -race -count=STRESS_UNIT_COUNT (200), emulator packages STRESS_RUNS (5) times; prints how many runs passed
test-stress: up $(TESTSUMMARY)
	@set -o pipefail; runs=0; passed=0; start=$$(date +%s); \
	pkgs=$$($(EMULATOR_PKGS)) || exit 1; \
	echo "test-stress: unit level, $(STRESS_UNIT_FLAGS)"; runs=$$((runs + 1)); \
	if env -u AWS_ENDPOINT_URL_SQS -u AWS_ENDPOINT_URL_DYNAMODB SQSWORKER_TEST_UNIT_ONLY=1 \
		$(GO) test -json $(STRESS_UNIT_FLAGS) work 2>&1 | $(TESTSUMMARY); then passed=$$((passed + 1)); fi; \
	for run in $$(seq $(STRESS_RUNS)); do \
		echo "test-stress: emulator packages, run $$run of $(STRESS_RUNS), $(GOTESTFLAGS)"; runs=$$((runs + 1)); \
		if ($(EMULATOR_ENV) && $(GO) test -json $(GOTESTFLAGS) $$pkgs 2>&1 | $(TESTSUMMARY)); then passed=$$((passed + 1)); fi; \
	done; \
	echo "test-stress: $$passed of $$runs runs passed ($$(( $$(date +%s) - start )) s)"; \
	test $$passed -eq $$runs

## test-elasticmq: make test's second lane alone: the emulator packages with SQS on ElasticMQ (localstack/elasticmq-up; DynamoDB stays on moto)
test-elasticmq: up $(TESTSUMMARY)
	localstack/elasticmq-up
	GO=$(GO) GOTESTFLAGS='$(GOTESTFLAGS)' scripts/test elasticmq

## ui-screenshots: rewrite docs/ui-*.png (queues, a queue's charts, dead letters, dry run, idempotency, outbox), the operations page as the headless-Chromium test sees it
ui-screenshots: up-emulator
	localstack/postgres-up
	localstack/chromium-up
	$(EMULATOR_ENV) && SQSWORKER_UI_SCREENSHOTS=$(CURDIR)/docs $(GO) test -count=1 -run '^TestBrowser(Charts)?$$' ./cmd/sqsworker/internal/ui

## demo: the webhook-delivery pipeline end to end on the emulator (orders and outbox in DynamoDB; DEMO_STORE=postgres for PostgreSQL, which it then installs and starts); prints the summary line
DEMO_STORE ?= dynamodb
demo: up-emulator
	$(if $(filter postgres,$(DEMO_STORE)),localstack/postgres-up)
	$(EMULATOR_ENV) && $(GO) run ./examples/webhook/demo -store=$(DEMO_STORE)

## vet: go vet of every module in go.work, also for GOOS=windows (the library builds everywhere), the module boundary check (no published module imports another module's internal/) and license-check
vet: license-check
	$(GO) vet work
	GOOS=windows $(GO) vet work
	GO=$(GO) scripts/check-module-imports

## license-check: every published module's LICENSE is detected as Apache-2.0 by github.com/google/licensecheck (what pkg.go.dev uses)
license-check:
	$(GO) run ./tools/licensecheck

## tidy: go mod tidy in every module of go.work, each on its own (GOWORK=off), the sibling modules served at the required version from the working tree (scripts/tidy)
tidy:
	GO=$(GO) scripts/tidy

## tidy-check: fails when `go mod tidy` would change any module's go.mod or go.sum (scripts/tidy -check)
tidy-check:
	GO=$(GO) scripts/tidy -check

## release-require: make every module require the others at VERSION (the first step of a release; commit it, then make release)
release-require:
	@test -n "$(VERSION)" || { echo "usage: make release-require VERSION=vX.Y.Z" >&2; exit 2; }
	GO=$(GO) scripts/release require $(VERSION)

## release: check the tree (clean, tidy, every published module requires the others at VERSION, no replace) and tag VERSION and DIR/VERSION per published module; pushes nothing
release:
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=vX.Y.Z" >&2; exit 2; }
	GO=$(GO) scripts/release tag $(VERSION)

## install-check: the modules as a user meets them: served at the required version from a local file proxy of the working tree, then from a scratch module outside the repo go get every library module, go install the CLI, build a worker, run sqsworker --version
install-check:
	GO=$(GO) scripts/install-check

## footprint: build the three footprint workers (scripts/footprint/testdata) stripped and fail when one links more modules or is larger than its budget (scripts/footprint/budgets)
footprint:
	GO=$(GO) scripts/footprint/run

## lambda: the provided.al2023 bootstrap of LAMBDA_PKG for linux/arm64 and amd64, zipped in DIST (default dist/ here); LAMBDA_PKG may be a package of another module (an absolute path: make -C /path/to/sqsworker lambda LAMBDA_PKG=$$PWD/cmd/myfn), built from its own directory so that its own go.mod applies
lambda:
	@set -e; dist=$(abspath $(DIST)); for arch in $(LAMBDA_ARCHES); do \
		rm -rf $$dist/$$arch && mkdir -p $$dist/$$arch; \
		(cd $(LAMBDA_PKG) && GOOS=linux GOARCH=$$arch CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
			-o $$dist/$$arch/bootstrap .); \
		rm -f $$dist/bootstrap-$$arch.zip; \
		(cd $$dist/$$arch && python3 -m zipfile -c ../bootstrap-$$arch.zip bootstrap); \
		echo "$$dist/bootstrap-$$arch.zip: $$(wc -c < $$dist/$$arch/bootstrap) bytes unzipped, $$(wc -c < $$dist/bootstrap-$$arch.zip) zipped"; \
	done

## lambda-build-check: make lambda of a scratch module outside the repo that gets the root module at the required version from the local file proxy install-check uses; checks the zip holds one linux/arm64 bootstrap
lambda-build-check:
	GO=$(GO) scripts/lambda-build-check

## image: the poller's container image (needs a Docker engine)
image:
	docker build -t $(IMAGE) .

## tf-validate: terraform fmt -check, then init from the local provider mirror (TF_PLUGIN_MIRROR, default /opt/tf-plugins; fails when missing), validate of every module and example, and terraform test (mock_provider) where a module has tests/*.tftest.hcl
tf-validate:
	scripts/tf-validate

## soak: chaos soak on the emulator (SOAK_N messages, default 10000); prints the soak: line
soak: up-emulator
	$(EMULATOR_ENV) && $(GO) run ./soak

## soak-ci: the short soak CI runs (1000 messages, under a minute)
soak-ci: up-emulator
	$(EMULATOR_ENV) && SOAK_N=1000 $(GO) run ./soak

# bench runs on LocalStack (BENCH_EMULATOR=localstack) or ElasticMQ (elasticmq, started
# with localstack/elasticmq-up), with BENCH_LATENCY added to every SQS call by the bench's
# proxy (for example 10ms, the round trip to SQS in-region). Its section of
# docs/benchmarks.md (one per emulator and latency) and its chart are rewritten.
BENCH_EMULATOR ?= localstack
BENCH_LATENCY ?= 0s
BENCH_CHART = benchmarks-$(BENCH_EMULATOR)-$(BENCH_LATENCY).png
BENCH_ENV = $(if $(filter elasticmq,$(BENCH_EMULATOR)),localstack/elasticmq-up && export SQSWORKER_SQS_EMULATOR=elasticmq && )$(EMULATOR_ENV)

## bench: side-by-side benchmark (BENCH_EMULATOR=localstack|elasticmq, BENCH_LATENCY=10ms, BENCH_REPEATS=3, BENCH_DURATION=10s); rewrites its section of docs/benchmarks.md and its chart
bench: up-emulator
	$(BENCH_ENV) && cd bench && BENCH_LATENCY=$(BENCH_LATENCY) $(GO) run . -docs ../docs/benchmarks.md -chart ../docs/$(BENCH_CHART)

## bench-elasticmq: make bench on ElasticMQ with 10 ms per SQS call (the issue-15 targets)
bench-elasticmq:
	$(MAKE) bench BENCH_EMULATOR=elasticmq BENCH_LATENCY=$(if $(filter 0s,$(BENCH_LATENCY)),10ms,$(BENCH_LATENCY))

## bench-ci: a CI-size bench run (1 s runs, no Spring, no max-rate runs) that writes nothing (fails only when a contender fails)
bench-ci: up-emulator
	cd bench && $(GO) vet ./... && $(GO) test -count=1 ./...
	$(EMULATOR_ENV) && cd bench && BENCH_DURATION=1s BENCH_WARMUP=500ms BENCH_REPEATS=1 BENCH_MAX_CONCURRENCY=none \
		BENCH_CONTENDERS=ceiling,poller,poller_idempotency,sqs_consumer,lambda_esm $(GO) run .

## bench-go: in-process micro-benchmarks (ns/op, allocs/op)
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem . ./internal/settle ./poller ./idempotency ./lambda
	$(GO) test -run '^$$' -bench 'BenchmarkSend$$|BenchmarkBatcherParallel$$' -benchmem ./producer
	cd bench && $(GO) test -run '^$$' -bench . -benchmem .

# saturation runs TestSaturationDeadLettersNoHealthyJob (fleetlimit) at full size: one key
# limited to 1 kept saturated for SATURATION (SATURATION/400 ms jobs of 400 ms; 10m is
# 1,500), on LocalStack or ElasticMQ (SATURATION_EMULATOR=elasticmq, started with
# localstack/elasticmq-up). It takes somewhat longer than SATURATION (10m: 10 min 45 s on
# LocalStack, docs/benchmarks.md), so SATURATION_TIMEOUT leaves room for a loaded machine.
SATURATION ?= 10m
SATURATION_EMULATOR ?= localstack
SATURATION_TIMEOUT ?= 60m
SATURATION_ENV = $(if $(filter elasticmq,$(SATURATION_EMULATOR)),localstack/elasticmq-up && export SQSWORKER_SQS_EMULATOR=elasticmq && )$(EMULATOR_ENV)

## saturation: fleetlimit's saturation test with its key saturated for SATURATION (10m: 1,500 jobs; SATURATION_EMULATOR=elasticmq, SATURATION_TIMEOUT=60m): every job once, none dead-lettered; prints jobs, deferrals, hops, most receives, wall time
saturation: up-emulator
	$(SATURATION_ENV) && $(GO) test -race -count=1 -v -timeout $(SATURATION_TIMEOUT) -run '^TestSaturationDeadLettersNoHealthyJob$$' ./fleetlimit/ -fleetlimit.saturation=$(SATURATION)

OUTBOX_BENCH_N ?= 2000
## bench-outbox: the outbox relays on DynamoDB (moto) and PostgreSQL: entries/s and SQS calls per entry (OUTBOX_BENCH_LATENCY=10ms per SQS call, OUTBOX_BENCH_INFLIGHT, OUTBOX_BENCH_BATCH)
bench-outbox: up-emulator
	localstack/postgres-up
	$(EMULATOR_ENV) && $(GO) test -run '^$$' -bench BenchmarkRelay -benchtime $(OUTBOX_BENCH_N)x ./outbox/outboxdynamo ./outbox/outboxpg

FUZZTIME ?= 20s
FUZZ_TARGETS = .:FuzzBackoffDelay ./internal/sqsx:FuzzApplySystemAttributes ./poller:FuzzConvertMessage \
	./lambda:FuzzToMessageJSON ./lambda:FuzzQueueURLFromARN ./idempotency:FuzzKeyFromJSONField \
	./idempotency:FuzzHashJSONFields ./idempotency:FuzzJSONBodyStrictness ./redrive:FuzzParseFilter

## fuzz: every fuzz target for FUZZTIME each (go test -fuzz takes one target per package per run); make test runs their seed corpora
fuzz:
	@status=0; for target in $(FUZZ_TARGETS); do pkg=$${target%%:*}; name=$${target##*:}; \
		echo "== $$name ($$pkg)"; $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || status=1; \
	done; exit $$status
