# The two Quick start commands: `make demo` and `make test`. Both create the
# environment from nothing when it is missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: demo test lint setup clean eval check-clients check-wheel check-conformance

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# CPU torch first: a plain torch requirement would pull gigabytes of CUDA packages.
	# The CPU build from PyTorch's own index where it is reachable; else the plain pin
	# (from PyPI or a local mirror), so setup works without that index.
	$(BIN)/python -m pip install --quiet --retries 1 --timeout 10 \
	  --index-url $(TORCH_CPU_INDEX) torch==2.13.0 \
	  || $(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/vault --vault vault reindex
	$(BIN)/vault --vault vault search "how do I connect Claude Code"
	@echo
	@echo "Connect Claude Code to this vault (runs claude mcp add, or prints what to paste):"
	@echo "  $(CURDIR)/$(BIN)/vault --vault $(CURDIR)/vault mcp install"

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -q

# Retrieval evaluation (bench/eval/README.md): Cranfield, CACM and our own sets in every mode
# next to bm25s, dense and their RRF, and the experiments; bench/out/eval keeps the
# indexes between runs.
eval: $(STAMP)
	$(BIN)/python -m bench.eval --experiments --workdir bench/out/eval --json-out bench/eval/results.json

# Real MCP clients against `vault mcp`: the MCP inspector's CLI and Claude Code's
# `claude mcp add/list` (npm packages pinned in scripts/clients; installs them first).
check-clients: $(STAMP)
	scripts/check_clients.sh

# The wheel on its own: built, installed into a fresh environment (CPU torch first) and
# used from an empty home folder: init, new, reindex, search, mcp (scripts/wheel_smoke.sh).
check-wheel:
	PY=$(PY) scripts/wheel_smoke.sh

# The official MCP conformance suite against `vault mcp --http` on the starter vault
# (the suite and Node 22 are pinned in scripts/conformance; installs them first). Fails
# on any scenario not in scripts/conformance/expected-failures.yml.
check-conformance: $(STAMP)
	$(BIN)/python scripts/check_conformance.py

clean:
	rm -rf $(VENV) index
