# The commands of the README: `make demo`, `make test`, `make lint` (ruff + mypy, settings in
# pyproject.toml; CI runs it). Each sets up .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench setup clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m tempo.demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -m "not slow" tests

lint: $(STAMP)
	$(BIN)/ruff check tempo tests
	$(BIN)/mypy tempo

bench: $(STAMP)
	$(BIN)/pip install --quiet -e ".[dev,bench]"
	$(BIN)/python -m tempo.bench all
	$(BIN)/python -m tempo.bench compile --before

clean:
	rm -rf $(VENV) results runs test_run
