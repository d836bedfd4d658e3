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

deploy: install
	./infra/deploy.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
