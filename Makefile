# Two commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000

# torch (the confirmation only): the CPU build, from PyTorch's own CPU index unless pip's
# configuration already supplies a CPU build (scripts/install-torch decides and says which).
# TORCH_INDEX_URL=<a mirror>, or https://download.pytorch.org/whl/cu128 for the CUDA build on
# purpose (a venv that has torch keeps it: `make clean` first); WITH_TORCH=no installs none and
# serves everything but the confirmation.
TORCH_INDEX_URL ?= https://download.pytorch.org/whl/cpu
WITH_TORCH      ?= yes
TORCH_PIN       := $(shell sed -n 's/^torch = \["\(torch==[^"]*\)"\]/\1/p' pyproject.toml)
TORCH_ARGS       = --pin '$(TORCH_PIN)' --index-url '$(TORCH_INDEX_URL)' \
                   --index-url-origin '$(origin TORCH_INDEX_URL)' --with-torch '$(WITH_TORCH)'
TORCH_STAMP     := $(if $(filter no,$(WITH_TORCH)),,$(VENV)/.torch-installed)
HAS_TORCH        = $(BIN)/python -c 'import importlib.util as u, sys; sys.exit(not u.find_spec("torch"))'
# The version of every package pip installs, generated from pyproject.toml by `make lock`.
CONSTRAINTS     ?= requirements/constraints.txt
PIP_INSTALL      = $(BIN)/python -m pip install -q $(if $(CONSTRAINTS),-c $(CONSTRAINTS))

# The Python scripts `make` runs (no .py suffix: ruff and mypy are given them by name).
SCRIPTS          = scripts/install-torch scripts/serve scripts/lock

.PHONY: run test test-quick lint fmt bench lock torch-plan verify-image clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.torch-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python scripts/install-torch $(TORCH_ARGS) --stamp $@

# torch's own dependencies come with the torch extra, from pip's ordinary indexes, once torch is
# there (never the extra alone: on Linux PyPI would bring the CUDA build).
$(VENV)/.run-installed: pyproject.toml $(CONSTRAINTS) $(TORCH_STAMP) | $(BIN)/python
	if $(HAS_TORCH); then $(PIP_INSTALL) -e '.[torch]'; else $(PIP_INSTALL) -e .; fi
	touch $@

$(VENV)/.test-installed: pyproject.toml $(CONSTRAINTS) $(VENV)/.run-installed
	if $(HAS_TORCH); then $(PIP_INSTALL) -e '.[torch,test]'; else $(PIP_INSTALL) -e '.[test]'; fi
	touch $@

# Prints the address once the server answers; Ctrl-C stops it (exit 0, no process left).
run: $(VENV)/.run-installed
	$(if $(filter no,$(WITH_TORCH)),ATLAS_CONFIRM_ENABLED=false) \
	    $(BIN)/python scripts/serve --host $(HOST) --port $(PORT)

# ruff (lint and format) and mypy: one command line, which `make test` also runs.
LINT = $(BIN)/ruff check app tests bench $(SCRIPTS) \
       && $(BIN)/ruff format --check app tests bench $(SCRIPTS) \
       && $(BIN)/mypy \
       && for script in $(SCRIPTS); do $(BIN)/mypy --strict --no-error-summary $$script || exit 1; done

lint: $(VENV)/.test-installed
	$(LINT)

fmt: $(VENV)/.test-installed
	$(BIN)/ruff format app tests bench $(SCRIPTS)
	$(BIN)/ruff check --fix app tests bench $(SCRIPTS)

# Every test, in two parts. First the tests bound by wall time (a browser's, /healthz's, deadlines
# of a fraction of a second: marked `alone`, in ALONE_TESTS only; tests/conftest.py refuses the
# mark elsewhere), by themselves: they leave most of the two cores idle, and beside all but the
# first of them, at idle priority (SCHED_IDLE: a core only when no test wants it), run lint (chrt
# where it exists, and nice 19; mypy's cold start is about 17 s of one core) and the start of
# every other test's run: its workers start and collect, then wait for TURN, which the recipe
# holds (flock) until the alone tests end, and take normal priority back (tests/turns.py). Those
# others run on three workers (the suite waits on servers, browsers and torch pools: two kept the
# cores 64 % busy, three 91-94 %); one xdist group (the clock-sensitive tests; a module sharing one
# server) stays on one worker. Every part runs whatever another's outcome; lint's report is
# printed at the end, and the last line says what failed, if anything.
# Python's bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE,
# as on this machine): else every server, worker and torch rank the tests start compiles the app
# again, and every pytest process rewrites every test module's asserts (about 9 s each).
# The alone tests: a dashboard of 2,000 in Chromium first, with nothing at all beside it (its
# click-to-pause bound of 300 ms was missed by up to 36 ms in 2 of 8 runs with the idle work
# beside it), then the others, with only idle work beside them.
ALONE_BY_ITSELF = tests/browser/test_live_scale.py
ALONE_BESIDE    = tests/test_live_events.py tests/test_live_streams.py tests/test_server.py \
                  tests/test_server_guards.py
ALONE_TESTS    := $(ALONE_BY_ITSELF) $(ALONE_BESIDE)
LINT_LOG    = .pytest_cache/lint.log
# Locked by make test while the alone tests run; the other tests wait for it (tests/turns.py).
TURN        = $(CURDIR)/.pytest_cache/turn.lock
# Lint's priority beside the alone tests: idle where chrt (util-linux) exists, else the lowest nice.
IDLE        = $(if $(shell command -v chrt),chrt --idle 0) nice -n 19
test: export PYTHONDONTWRITEBYTECODE =
test: export ATLAS_TESTS_ALONE = $(ALONE_TESTS)
test: $(VENV)/.test-installed
	@mkdir -p $(dir $(LINT_LOG))
	@exec 9> $(TURN); $(BIN)/python -c 'import fcntl; fcntl.flock(9, fcntl.LOCK_EX)'; \
	$(BIN)/pytest -m alone $(ALONE_BY_ITSELF) 9>&-; alone=$$?; \
	($(IDLE) sh -c '$(LINT)') > $(LINT_LOG) 2>&1 9>&- & linting=$$!; \
	ATLAS_TESTS_TURN=$(TURN) $(BIN)/pytest -n 3 --dist loadgroup -m 'not alone' 9>&- & others=$$!; \
	$(BIN)/pytest -m alone $(ALONE_BESIDE) 9>&-; alone=$$((alone | $$?)); \
	exec 9>&-; \
	wait $$others; tested=$$?; \
	wait $$linting; linted=$$?; \
	echo "--- make lint (run beside the alone tests) ---"; cat $(LINT_LOG); \
	failed=""; \
	if [ $$linted -ne 0 ]; then failed="$$failed; make lint (exit $$linted, its report just above)"; fi; \
	if [ $$alone -ne 0 ]; then failed="$$failed; the alone tests (the first two pytest summaries)"; fi; \
	if [ $$tested -ne 0 ]; then failed="$$failed; the other tests (exit $$tested, the last pytest summary)"; fi; \
	if [ -n "$$failed" ]; then echo "make test failed: $${failed#; }"; exit 1; fi; \
	echo "make test passed: lint, the alone tests and the other tests"

# The inner loop: no lint, no browser, no torch pool, no real server, no wall-time bound (alone),
# fewer hypothesis examples, on two cores (tests of one xdist group, the clock-sensitive ones,
# stay on one worker).
QUICK_MARKERS = not browser and not distributed and not server and not slow and not alone
test-quick: export PYTHONDONTWRITEBYTECODE =
test-quick: export ATLAS_TESTS_QUICK = 1
test-quick: $(VENV)/.test-installed
	HYPOTHESIS_PROFILE=quick $(BIN)/pytest -n 2 --dist loadgroup -m '$(QUICK_MARKERS)'

bench: $(VENV)/.test-installed
	$(BIN)/python -m bench

# Regenerate the constraints from pyproject.toml (after changing a dependency there).
lock: | $(BIN)/python
	$(BIN)/python scripts/lock --pyproject pyproject.toml --output $(CONSTRAINTS)

# Where torch would come from, and the pip command; installs nothing.
torch-plan: | $(BIN)/python
	@$(BIN)/python scripts/install-torch $(TORCH_ARGS) --plan

verify-image:
	bash scripts/verify-image

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
