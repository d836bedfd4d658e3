# Metro. `make help` lists the targets; `make run` starts the embedded stack, `make test` runs everything.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
PYTEST := $(BIN)/pytest
ARGS ?=
RECORD ?=

.DEFAULT_GOAL := help
.PHONY: help install install-run clients run run-aws check test lint ruff mypy unit functional package-tests e2e compat spark \
        bench bench-quick bench-spark fuzz race chaos soak compact retention metrics replay deploy destroy policies \
        spark35 rehearse clean

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

$(RUN_STAMP): requirements.txt requirements-run.txt | $(BIN)/python
	@echo "==> installing what running needs (requirements-run.txt: moto server, boto3, chalice, pydantic, ..."
	@echo "    82 packages, 57 MB to download, 350 MB installed: a minute or two on a quiet machine)"
	$(BIN)/python -m pip install --disable-pip-version-check -r requirements-run.txt
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
run: $(RUN_STAMP) ## Start the AWS emulator, the API on 127.0.0.1:$METRO_PORT (8085) and the trigger pumps
	$(BIN)/python -m chalicelib.local

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

package-tests: $(DEV_STAMP) ## Packaging tests: chalice package, cfn-lint, the bundle and the pyarrow layer (-m package)
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

check: lint ## The quick loop: ruff, mypy, unit and functional tests (well under a minute on 2 idle CPUs)
	@echo "==> unit and functional tests"
	$(PYTEST) -q -n 2 -m "unit or functional"

test: lint ## Everything CI runs: ruff, mypy, then every tier on two workers (about 5 minutes)
	@echo "==> every test tier (unit, functional, package, e2e, compat, spark) on two workers"
	$(PYTEST) -q -n 2 --dist loadfile

# --- benchmarks: they write under bench/out/ (untracked); RECORD=1 writes the tracked figures -------------------
bench: $(DEV_STAMP) ## Benchmark scenarios on the embedded stack -> bench/out/ (RECORD=1: bench/results.json, chart, docs table)
	$(BIN)/python -m bench.run $(if $(RECORD),--record) $(ARGS)
	$(if $(RECORD),$(BIN)/python -m bench.table)

bench-quick: $(DEV_STAMP) ## A few hundred messages per scenario (CI) -> bench/out/results-quick.json
	$(BIN)/python -m bench.run --quick $(ARGS)

bench-spark: $(DEV_STAMP) ## Compaction of 100,000 messages, own emulator -> bench/out/ (RECORD=1: tracked file)
	$(BIN)/python -m spark_emr.bench $(if $(RECORD),--record) $(ARGS)

# --- reliability: fuzzing from the OpenAPI description, racing consumers (QUICK=1: the short forms CI runs) -----
fuzz: $(DEV_STAMP) ## schemathesis from /openapi.json on the local stack, open and keys mode -> bench/out/fuzz.json
	$(BIN)/python -m bench.fuzz $(if $(QUICK),--quick) $(ARGS)

race: $(DEV_STAMP) ## 8 racing pullers on a plain and an exactly-once subscription -> bench/out/race.json
	$(BIN)/python -m bench.race $(if $(QUICK),--quick) $(ARGS)
# --- reliability: three-process stack (emulator, API, pumps) under faults or steady load -> bench/out/ ------------
#   QUICK=1: the short forms CI runs (chaos: 1,500 messages; soak: one minute at 4 messages/s)
chaos: $(DEV_STAMP) ## Fault run: 100,000 messages, API and pumps killed at random, 5% AWS faults (RECORD=1: bench/)
	$(BIN)/python -m bench.chaos chaos $(if $(QUICK),--messages 1500) $(if $(RECORD),--record) $(ARGS)

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
deploy: $(DEV_STAMP) ## Deploy stage STAGE to AWS (storage, secrets, app; GRPC=1: the gRPC edge too; re-runnable)
	$(BIN)/python -m infra.deploy deploy --stage $(STAGE) $(GRPC_FLAGS)

destroy: $(DEV_STAMP) ## Remove stage STAGE's app and gRPC edge; keeps tables and bucket unless DELETE_DATA=1
	$(BIN)/python -m infra.deploy destroy --stage $(STAGE) $(if $(DELETE_DATA),--delete-data)

# The packaged artifact in an emulator that runs the functions and their event source mappings: ministack in its own
# venv (it pins botocore), on a free port, or REHEARSE_ENDPOINT (LocalStack: http://localhost:4566). ARGS go to pytest.
REHEARSE_VENV := .venv-rehearse
$(REHEARSE_VENV)/.installed: requirements-rehearse.txt
	test -x $(REHEARSE_VENV)/bin/python || $(PY) -m venv $(REHEARSE_VENV)
	@echo "==> installing the rehearsal's emulator (requirements-rehearse.txt: ministack and its pins; ~100 MB)"
	$(REHEARSE_VENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements-rehearse.txt
	touch $@

rehearse: $(DEV_STAMP) $(if $(REHEARSE_ENDPOINT),,$(REHEARSE_VENV)/.installed) ## Deploy the packaged app into an emulator twice, then its e2e tests
	$(BIN)/python -m infra.rehearse -- $(ARGS)

policies: $(DEV_STAMP) ## Regenerate the per-function IAM policies of .chalice/
	$(BIN)/python -m infra.policies

clean: ## Remove .venv, caches and bench/out/
	rm -rf $(VENV) $(SPARK35) $(REHEARSE_VENV) .pytest_cache .mypy_cache .ruff_cache bench/out
