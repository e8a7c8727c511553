# Two commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: run test lint fmt bench verify-image clean

# The torch extra is pinned to a CPU build (torch==2.13.0); see pyproject.toml.
$(VENV)/.run-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[torch]'
	touch $@

$(VENV)/.test-installed: pyproject.toml $(VENV)/.run-installed
	$(BIN)/python -m pip install -q -e '.[torch,test]'
	touch $@

run: $(VENV)/.run-installed
	$(BIN)/uvicorn app.main:app --host $(HOST) --port $(PORT)

lint: $(VENV)/.test-installed
	$(BIN)/ruff check app tests bench
	$(BIN)/ruff format --check app tests bench
	$(BIN)/mypy

fmt: $(VENV)/.test-installed
	$(BIN)/ruff format app tests bench
	$(BIN)/ruff check --fix app tests bench

test: lint
	$(BIN)/pytest

bench: $(VENV)/.test-installed
	$(BIN)/python -m bench

verify-image:
	bash scripts/verify-image

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
