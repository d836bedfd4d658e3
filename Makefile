# Metro: `make run` starts the embedded stack, `make test` runs lint, types and every test.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run run-aws test lint unit functional e2e compat spark bench bench-quick bench-spark \
        compact retention metrics replay deploy clean

install: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

run: install
	$(BIN)/python -m chalicelib.local

run-aws: install
	$(BIN)/python -m chalicelib.local --aws

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy app.py chalicelib

unit: install
	$(BIN)/pytest -q tests/unit

functional: install
	$(BIN)/pytest -q tests/functional

e2e: install
	$(BIN)/pytest -q tests/e2e

compat: install
	$(BIN)/pytest -q tests/compat

spark: install
	$(BIN)/pytest -q tests/spark

test: lint
	$(BIN)/pytest -q -n 2 --dist loadfile

bench: install
	$(BIN)/python -m bench.run

bench-quick: install
	$(BIN)/python -m bench.run --quick

# The Spark jobs (spark_emr/) with spark-submit --master local[2] against the stack of `make run`
# (its AWS emulator on 127.0.0.1:4566, or AWS_ENDPOINT_URL). ARGS go to the job, e.g.
#   make compact ARGS="--min-age-seconds 0"      make retention ARGS="--retention-seconds 86400 --dry-run"
#   make replay SUBSCRIPTION=projects/p/subscriptions/s START=2026-11-22T00:00:00Z END=2026-11-22T06:00:00Z
ARGS ?=
compact retention metrics: install
	$(BIN)/python -m spark_emr.submit $@ $(ARGS)

replay: install
	@test -n "$(SUBSCRIPTION)" -a -n "$(START)" -a -n "$(END)" || \
	  { echo "usage: make replay SUBSCRIPTION=projects/p/subscriptions/s START=<RFC 3339> END=<RFC 3339> [ARGS=...]"; exit 2; }
	$(BIN)/python -m spark_emr.submit replay --subscription $(SUBSCRIPTION) --start $(START) --end $(END) $(ARGS)

# Compaction throughput on local[2] for 100,000 messages of 1 KiB (its own moto server; no stack needed).
bench-spark: install
	$(BIN)/python -m spark_emr.bench $(ARGS)

deploy: install
	./infra/deploy.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
