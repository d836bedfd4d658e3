# Metro. `make help` lists the targets; `make run` starts the embedded stack, `make test` runs everything.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
PYTEST := $(BIN)/pytest
ARGS ?=
RECORD ?=
CHECKOV_VENV := .venv-checkov

.DEFAULT_GOAL := help
.PHONY: help install install-run clients run run-aws reset check test lint ruff mypy unit functional package-tests e2e compat spark \
        bench bench-quick bench-io bench-spark fuzz race chaos soak compact retention metrics replay deploy destroy fis policies \
        spark35 rehearse clean browser console-screenshots emr-venv emr-imports emr-arm64 emr-deploy emr-destroy emr-run

help: ## List the targets (this text)
	@echo "Metro: a Google Pub/Sub REST v1 compatible service on AWS. Targets:"
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-z][a-z0-9 -]*:.*## / {printf "  make %-26s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo "Settings: METRO_PORT (API, default 8085), METRO_AMS_PORT (AMS dialect over HTTPS, 8443), METRO_EMULATOR_PORT (AWS emulator, 4566), PY (python3)."

# --- installation: two stamps, so that `make run` installs only what running needs --------------------------------
$(BIN)/python:
	@$(PY) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "Metro needs Python >= 3.11; $(PY) is $$($(PY) -V 2>&1). Try: make PY=python3.11 ..."; exit 1; }
	@echo "==> creating $(VENV) with $$($(PY) -V)"
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q --upgrade pip

$(RUN_STAMP): requirements.txt requirements-run.txt pyproject.toml | $(BIN)/python
	@echo "==> installing what running needs (requirements-run.txt: moto server, boto3, chalice, pydantic, ..."
	@echo "    82 packages, 57 MB to download, 350 MB installed: a minute or two on a quiet machine)"
	$(BIN)/python -m pip install --disable-pip-version-check -r requirements-run.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps -e .  # `metro` (docs/cli.md)
	@touch $@

$(DEV_STAMP): $(RUN_STAMP) requirements-dev.txt
	@echo "==> installing test, lint, type, Spark and benchmark tooling (requirements-dev.txt: pyspark, pyarrow,"
	@echo "    google-cloud-pubsub, mypy, ruff, matplotlib, ...: 1.5 GB in .venv in all; a few minutes)"
	$(BIN)/python -m pip install --disable-pip-version-check -r requirements-dev.txt
	@touch $@

install-run: $(RUN_STAMP) ## Install what `make run` needs into .venv
install: $(DEV_STAMP) ## Install everything (run, tests, lint, Spark, benchmarks) into .venv

# The client libraries the examples use, at the versions requirements-dev.txt pins (the tests' own), resolved
# together with what running needs so that neither moves the other's pins.
CLIENT_PINS = $(shell grep -E '^(google-api-python-client|argo-ams-library)==' requirements-dev.txt)
$(VENV)/.installed-clients: requirements.txt requirements-run.txt requirements-dev.txt | $(BIN)/python
	@echo "==> installing the client libraries into $(VENV): $(CLIENT_PINS)"
	$(BIN)/python -m pip install --disable-pip-version-check -r requirements-run.txt $(CLIENT_PINS)
	@touch $@

clients: $(VENV)/.installed-clients ## Install Google's and AMS's client libraries into .venv (run the examples with .venv/bin/python)

# --- running -----------------------------------------------------------------------------------------------------
# The local stack's state survives restarts in METRO_DATA_DIR (docs/local-state.md); METRO_DATA_DIR= keeps it in memory.
METRO_DATA_DIR ?= .metro/data

run: $(RUN_STAMP) ## Start the AWS emulator, the API on 127.0.0.1:$METRO_PORT (8085) and the trigger pumps (state in .metro/data)
	METRO_DATA_DIR=$(METRO_DATA_DIR) $(BIN)/python -m chalicelib.local

reset: $(RUN_STAMP) ## Wipe the local stack's state (METRO_DATA_DIR, .metro/data); refused while a stack uses it
	$(BIN)/metro reset --yes --data-dir $(or $(METRO_DATA_DIR),.metro/data)

run-aws: $(RUN_STAMP) ## The API and pumps against real AWS (credentials from the environment)
	$(BIN)/python -m chalicelib.local --aws

# --- checks and tests: tiers are pytest markers (tests/conftest.py marks each test by its directory) --------------
ruff: $(DEV_STAMP) ## Lint (ruff over the whole repository)
	@echo "==> ruff"
	$(BIN)/ruff check .

mypy: $(DEV_STAMP) ## Type-check app.py, chalicelib/, spark_emr/ and bench/ (mypy --strict)
	@echo "==> mypy"
	$(BIN)/mypy app.py chalicelib spark_emr bench

lint: ruff mypy ## ruff and mypy

unit: $(DEV_STAMP) ## Unit tests: pure core, no AWS (-m unit)
	$(PYTEST) -q -m unit

functional: $(DEV_STAMP) ## Functional tests: handlers and stores on in-process moto (-m functional)
	$(PYTEST) -q -m functional

package-tests: $(DEV_STAMP) $(CHECKOV_VENV)/.installed $(PACKAGE_VENV)/.installed ## Packaging tests: chalice package, cfn-lint, the bundle and the pyarrow layer (-m package)
	$(PYTEST) -q -m package

e2e: $(DEV_STAMP) ## End-to-end tests: the real stack as a subprocess, Google's clients (-m e2e)
	$(PYTEST) -q -m e2e

compat: $(DEV_STAMP) ## Side by side with Google's Pub/Sub emulator; skipped without gcloud (-m compat)
	$(PYTEST) -q -m compat

spark: $(DEV_STAMP) ## The PySpark jobs on local[2]; needs Java 17 (-m spark)
	$(PYTEST) -q -m spark

# EMR 7 ships Spark 3.5: the same Spark tests in their own venv on PySpark 3.5 (the dev pins but pyspark).
SPARK35 := .venv-spark35
SPARK35_PYSPARK := pyspark==3.5.5
$(SPARK35)/.installed: requirements-run.txt requirements-dev.txt
	test -x $(SPARK35)/bin/python || $(PY) -m venv $(SPARK35)
	@echo "installing the Spark 3.5 test venv ($(SPARK35_PYSPARK) and the dev pins but pyspark; ~1.5 GB)"
	grep -v '^pyspark==' requirements-dev.txt | sed 's#^-r requirements-run.txt#-r $(CURDIR)/requirements-run.txt#' \
	  > $(SPARK35)/requirements.txt
	$(SPARK35)/bin/python -m pip install -q --upgrade pip
	$(SPARK35)/bin/python -m pip install --progress-bar off $(SPARK35_PYSPARK) -r $(SPARK35)/requirements.txt
	touch $@

spark35: $(SPARK35)/.installed ## The Spark tests on PySpark 3.5, the Spark of EMR 7 (CI runs it too)
	$(SPARK35)/bin/python -c "import pyspark; print('PySpark', pyspark.__version__)"
	$(SPARK35)/bin/pytest -q -p no:cacheprovider -m spark tests/spark

# The policy check of the merged app template (infra/policy_check.py, tests/package/test_template_policies.py): checkov
# and the SAM transform in a venv of their own, since checkov pins boto3, botocore and packaging below the dev pins
# (requirements-checkov.txt; about 20 s to install, 290 MB).
$(CHECKOV_VENV)/.installed: requirements-checkov.txt
	test -x $(CHECKOV_VENV)/bin/python || $(PY) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements-checkov.txt
	touch $@

# Lambda runs the functions on python3.12 (infra/lambda_runtime.py), and `chalice package` bundles the wheels of the
# Python it runs on: it runs from .venv-package, Python 3.12 with requirements.txt, chalice and the runtime's boto3.
# LAMBDA_PY: that interpreter (default: python3.12 on the PATH, else pyenv's).
LAMBDA_PY ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12; do \
  "$$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1 && { echo "$$p"; break; }; done)
PACKAGE_VENV := .venv-package
LAMBDA_VENV_CHECK = '$(LAMBDA_PY)' -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null || \
  { echo "packaging for Lambda's python3.12 needs Python 3.12: install it, or point LAMBDA_PY at one"; exit 1; }
$(PACKAGE_VENV)/.installed: requirements.txt requirements-run.txt
	@$(LAMBDA_VENV_CHECK)
	@echo "==> installing $(PACKAGE_VENV) (Python 3.12 for Lambda's python3.12: requirements.txt, chalice, boto3; ~130 MB)"
	rm -rf $(PACKAGE_VENV) && '$(LAMBDA_PY)' -m venv $(PACKAGE_VENV)
	$(PACKAGE_VENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt \
	  $$(grep -E '^(chalice|boto3)==' requirements-run.txt)
	touch $@

# The console's browser tests (tests/e2e/test_console_browser.py) drive Debian's chromium through chromedriver; on a
# Debian machine without them, as root, `make test` installs both (about 15 s); elsewhere those tests skip, saying why.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    echo "==> installing chromium and chromium-driver (Debian packages) for the console's browser tests" && \
	    apt-get install -y -q chromium chromium-driver >/dev/null; } || \
	  echo "no chromium/chromedriver here: the console's browser tests will skip"

console-screenshots: $(DEV_STAMP) browser ## Refresh docs/console/*.png from the console's browser tests (docs/console.md)
	METRO_CONSOLE_SCREENSHOTS=1 $(PYTEST) -q tests/e2e/test_console_browser.py

check: lint ## The quick loop: ruff, mypy, unit and functional tests (well under a minute on 2 idle CPUs)
	@echo "==> unit and functional tests"
	$(PYTEST) -q -n 2 -m "unit or functional"

# Every process of the run (the pytest workers, the stacks they start) records its AWS calls by acting function
# under IAM_CALLS (chalicelib/store/call_record.py); the IAM gate then checks them against the per-function
# policies: a call not allowed, or a grant no call used, fails the target (infra/iam_gate.py).
IAM_CALLS := build/iam-calls
test: lint $(CHECKOV_VENV)/.installed $(PACKAGE_VENV)/.installed browser ## Everything CI runs: ruff, mypy, then every tier on two workers (about 5 minutes), then the IAM gate
	@echo "==> every test tier (unit, functional, package, e2e, compat, spark) on two workers"
	rm -rf $(IAM_CALLS) && mkdir -p $(IAM_CALLS)
	METRO_IAM_RECORD=$(CURDIR)/$(IAM_CALLS) $(PYTEST) -q -n 2 --dist loadfile
	@echo "==> the IAM gate: the recorded calls against .chalice/policy-dev-*.json"
	$(BIN)/python -m infra.iam_gate $(IAM_CALLS)

# --- benchmarks: they write under bench/out/ (untracked); RECORD=1 writes the tracked figures -------------------
bench: $(DEV_STAMP) ## Benchmark scenarios on the embedded stack -> bench/out/ (RECORD=1: bench/results.json, chart, docs table)
	$(BIN)/python -m bench.run $(if $(RECORD),--record) $(ARGS)
	$(if $(RECORD),$(BIN)/python -m bench.table)

bench-quick: $(DEV_STAMP) ## A few hundred messages per scenario (CI) -> bench/out/results-quick.json
	$(BIN)/python -m bench.run --quick $(ARGS)

bench-io: $(DEV_STAMP) ## An exported and an imported million (AWS requests on moto, priced), transforms per core -> bench/out/
	@mkdir -p bench/out
	@echo "==> an exported million (bench/exports.py)"
	$(BIN)/python -m bench.exports $(if $(QUICK),--messages 1500) | tee bench/out/exported-million.json
	@echo "==> an imported million (bench/imports.py)"
	$(BIN)/python -m bench.imports $(if $(QUICK),--batches 5) | tee bench/out/imported-million.json
	@echo "==> message transforms per core (bench/transforms.py)"
	$(BIN)/python -m bench.transforms | tee bench/out/transforms.json

bench-spark: $(DEV_STAMP) ## Compaction of 100,000 messages, own emulator -> bench/out/ (RECORD=1: tracked file)
	$(BIN)/python -m spark_emr.bench $(if $(RECORD),--record) $(ARGS)

.PHONY: capacity
capacity: $(DEV_STAMP) ## A simulated day against AWS's default quotas: peak concurrency, throttles, $ per M (PROFILE=...)
	$(BIN)/python -m bench.capacity --profile $(or $(PROFILE),default) $(ARGS)

# --- reliability: fuzzing from the OpenAPI description, racing consumers (QUICK=1: the short forms CI runs) -----
fuzz: $(DEV_STAMP) ## schemathesis from /openapi.json on the local stack, open and keys mode -> bench/out/fuzz.json
	$(BIN)/python -m bench.fuzz $(if $(QUICK),--quick) $(ARGS)

race: $(DEV_STAMP) ## 8 racing pullers on a plain and an exactly-once subscription -> bench/out/race.json
	$(BIN)/python -m bench.race $(if $(QUICK),--quick) $(ARGS)
# --- reliability: three-process stack (emulator, API, pumps) under faults or steady load -> bench/out/ ------------
#   QUICK=1: the short forms CI runs (chaos: 1,500 messages at 15 a second; soak: one minute at 4 messages/s)
chaos: $(DEV_STAMP) ## Fault run: 100,000 messages under kills, pauses, partitions, clock skew, torn writes, 5% AWS faults; history checked (RECORD=1: bench/)
	$(BIN)/python -m bench.chaos chaos $(if $(QUICK),--messages 1500 --rate 15) $(if $(RECORD),--record) $(ARGS)

soak: $(DEV_STAMP) ## 30 minutes at half the measured throughput: RSS, latency per minute (RECORD=1: bench/)
	$(BIN)/python -m bench.chaos soak $(if $(QUICK),--minutes 1 --rate 4) $(if $(RECORD),--record) $(ARGS)

# --- the Spark jobs (spark_emr/) with spark-submit --master local[2] against the stack of `make run` ------------
# (its emulator on 127.0.0.1:$METRO_EMULATOR_PORT, or AWS_ENDPOINT_URL). ARGS go to the job, e.g.
#   make compact ARGS="--min-age-seconds 0"      make retention ARGS="--retention-seconds 86400 --dry-run"
#   make replay SUBSCRIPTION=projects/p/subscriptions/s START=$(date -u -d '-1 hour' +%FT%TZ) END=$(date -u +%FT%TZ)
compact retention metrics: $(DEV_STAMP) ## Spark jobs on the data of `make run` (ARGS="..." go to the job)
	$(BIN)/python -m spark_emr.submit $@ $(ARGS)

replay: $(DEV_STAMP) ## Re-enqueue SUBSCRIPTION's messages published between START and END (RFC 3339)
	@test -n "$(SUBSCRIPTION)" -a -n "$(START)" -a -n "$(END)" || \
	  { echo "usage: make replay SUBSCRIPTION=projects/p/subscriptions/s START=<RFC 3339> END=<RFC 3339> [ARGS=...]"; \
	    echo "  e.g. START=\$$(date -u -d '-1 hour' +%FT%TZ) END=\$$(date -u -d '+1 minute' +%FT%TZ)"; exit 2; }
	$(BIN)/python -m spark_emr.submit replay --subscription $(SUBSCRIPTION) --start $(START) --end $(END) $(ARGS)

STAGE ?= dev
# GRPC=1 also deploys the gRPC edge (docs/deploy.md: ECS Fargate behind an ALB) after the app stack, with the image of
# infra/grpc/Dockerfile (GRPC_IMAGE, arm64, pushed) and the ACM certificate of its host name (GRPC_CERTIFICATE_ARN);
# in the default VPC's default subnets unless GRPC_SUBNETS=subnet-a,subnet-b (two zones at least).
GRPC_FLAGS = $(if $(GRPC),--grpc --grpc-image '$(GRPC_IMAGE)' --grpc-certificate-arn '$(GRPC_CERTIFICATE_ARN)' \
  $(if $(GRPC_SUBNETS),--grpc-subnet-ids '$(GRPC_SUBNETS)'))
# FRONT_DOOR=rest deploys REST APIs instead of the default HTTP APIs (docs/decisions/front-door.md).
FRONT_DOOR ?= http
# FIS=1 puts the AWS FIS extension on the functions the fault-injection experiments target (docs/fault-injection.md).
deploy: $(DEV_STAMP) $(PACKAGE_VENV)/.installed ## Deploy stage STAGE to AWS (storage, secrets, app; GRPC=1: the gRPC edge too; re-runnable)
	$(BIN)/python -m infra.deploy deploy --stage $(STAGE) --front-door $(FRONT_DOOR) $(GRPC_FLAGS) $(if $(FIS),--fis-extension)

destroy: $(DEV_STAMP) ## Remove stage STAGE's app and gRPC edge; keeps tables and bucket unless DELETE_DATA=1
	$(BIN)/python -m infra.deploy destroy --stage $(STAGE) $(if $(DELETE_DATA),--delete-data)

# The AWS Fault Injection Service experiments of stage STAGE (docs/fault-injection.md): JSON templates in build/fis/
# for `aws fis create-experiment-template --cli-input-json`, and stack.json with them, their role and the runbook.
fis: $(DEV_STAMP) ## Write stage STAGE's FIS experiment templates to build/fis (ACCOUNT=, REGION=; ARGS="--reserved push=N --grpc-vpc ...")
	$(BIN)/python -m infra.fis --stage $(STAGE) --account $(ACCOUNT) --region $(REGION) --out build/fis $(ARGS)

# --- the Spark jobs on AWS (docs/pipeline.md "Running on EMR"): EMR Serverless, arm64 (infra/emr/serverless.py) ---
# .venv-emr: exactly infra/emr/requirements-emr.txt plus the PySpark of EMR 7, which EMR provides; the import check
# runs every module the jobs load in it, with nothing on the path but the repository, and the environment archive's
# tests (EMR_BUILD: pip downloads the arm64 wheels, ~80 MB once).
EMR_VENV := .venv-emr
$(EMR_VENV)/.installed: infra/emr/requirements-emr.txt
	test -x $(EMR_VENV)/bin/python || $(PY) -m venv $(EMR_VENV)
	@$(EMR_VENV)/bin/python -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || \
	  { echo "$(EMR_VENV) must be Python 3.11, the jobs' on EMR: rm -rf $(EMR_VENV); make PY=python3.11 ..."; exit 1; }
	@echo "==> installing $(EMR_VENV): infra/emr/requirements-emr.txt and $(SPARK35_PYSPARK) (what EMR 7 provides)"
	$(EMR_VENV)/bin/python -m pip install -q --disable-pip-version-check -r infra/emr/requirements-emr.txt \
	  $(SPARK35_PYSPARK)
	touch $@

emr-imports: $(DEV_STAMP) $(EMR_VENV)/.installed ## Import every module the EMR jobs load in .venv-emr (requirements-emr.txt only)
	$(BIN)/python -m infra.emr.imports --python $(EMR_VENV)/bin/python
	METRO_EMR_VENV_REQUIRED=1 METRO_EMR_BUILD=1 $(PYTEST) -q -p no:cacheprovider \
	  tests/package/test_emr_imports.py tests/package/test_emr_venv.py

# Not in CI: needs Debian 12's apt sources (its arm64 python3.11) and qemu-user; about a minute once downloaded.
emr-arm64: $(DEV_STAMP) ## The arm64 environment run under qemu: Debian's arm64 python3.11, the imports, the pure job tests
	command -v qemu-aarch64 >/dev/null || apt-get install -y -q qemu-user
	$(BIN)/python -m infra.emr.arm64

# EMR_PYTHON: a CPython 3.11 for arm64 to copy into the archive (on an arm64 builder, e.g. /usr/bin/python3.11 on
# Amazon Linux 2023); without it bin/python is a symlink to /usr/bin/python3.11 (docs/pipeline.md says when that runs)
emr-venv: $(DEV_STAMP) ## Build dist/emr/venv.tar.gz: requirements-emr.txt for arm64 (EMR_PYTHON=...: with its interpreter)
	$(BIN)/python -m infra.emr.venv $(if $(EMR_PYTHON),--interpreter $(EMR_PYTHON))

EMR_FLAGS = $(if $(EMR_VENV_ARCHIVE),--venv $(EMR_VENV_ARCHIVE)) $(if $(EMR_PYTHON),--interpreter $(EMR_PYTHON)) \
  $(if $(ALARM_TOPIC_ARN),--alarm-topic-arn $(ALARM_TOPIC_ARN))
emr-deploy: $(DEV_STAMP) $(PACKAGE_VENV)/.installed ## Deploy stage STAGE's Spark jobs to EMR Serverless (after `make deploy`; EMR_VENV_ARCHIVE=, ALARM_TOPIC_ARN=)
	$(BIN)/python -m infra.emr.serverless deploy --stage $(STAGE) $(EMR_FLAGS) $(ARGS)

emr-run: $(DEV_STAMP) ## Start one job now on EMR Serverless: make emr-run STAGE=dev JOB=compact [ARGS="-- --min-age-seconds 0"]
	$(BIN)/python -m infra.emr.serverless run --stage $(STAGE) --job $(JOB) $(ARGS)

emr-destroy: $(DEV_STAMP) ## Remove stage STAGE's EMR Serverless stack (code and logs under emr/ in the bucket stay)
	$(BIN)/python -m infra.emr.serverless destroy --stage $(STAGE)

# The packaged artifact in an emulator that runs the functions and their event source mappings: ministack in its own
# venv (it pins botocore), on a free port, or REHEARSE_ENDPOINT (LocalStack: http://localhost:4566). ARGS go to pytest.
REHEARSE_VENV := .venv-rehearse
# ministack runs the functions with its own Python: Lambda's, 3.12.
$(REHEARSE_VENV)/.installed: requirements-rehearse.txt
	@$(LAMBDA_VENV_CHECK)
	$(REHEARSE_VENV)/bin/python -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null || \
	  { rm -rf $(REHEARSE_VENV) && '$(LAMBDA_PY)' -m venv $(REHEARSE_VENV); }
	@echo "==> installing the rehearsal's emulator (requirements-rehearse.txt: ministack and its pins; ~100 MB)"
	$(REHEARSE_VENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements-rehearse.txt
	touch $@

rehearse: $(DEV_STAMP) $(PACKAGE_VENV)/.installed $(if $(REHEARSE_ENDPOINT),,$(REHEARSE_VENV)/.installed) ## Deploy the packaged app into an emulator twice, then its e2e tests
	$(BIN)/python -m infra.rehearse -- $(ARGS)

policies: $(DEV_STAMP) ## Regenerate the per-function IAM policies of .chalice/
	$(BIN)/python -m infra.policies

clean: ## Remove .venv, caches and bench/out/
	rm -rf $(VENV) $(SPARK35) $(REHEARSE_VENV) $(CHECKOV_VENV) $(EMR_VENV) .pytest_cache .mypy_cache .ruff_cache bench/out
