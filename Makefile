# attnlab: `make reproduce` regenerates the figures, `make test` checks the code and the notebooks.
# Both create the environment (.venv, torch pinned to the CPU build 2.13.0) when it is missing.

PYTHON ?= python3
# torch for the CPU environment, pinned here (pyproject keeps a loose range for users elsewhere).
TORCH_VERSION := 2.13.0
# Where that CPU build comes from. auto: the PyTorch CPU wheel index, when the machine has no CUDA and the index
# answers (else pip's default index and its configured wheel folders, which is how a machine that can reach only
# PyPI gets a CPU wheel on disk); a URL: that index; empty (TORCH_INDEX=): pip's default only.
TORCH_INDEX ?= auto
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
# The exact versions the tests ran with (pip constraints); LOCK= installs from the ranges in pyproject alone.
LOCK ?= .ci/requirements-lock.txt
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SCALE ?=
NOTEBOOKS ?=
# Notebook parameters for reproduce, key=value separated by spaces: PARAMS='seeds=[0,1] steps=100'.
PARAMS ?=
NPROC ?=
GPU_CHECK_FLAGS ?=
BENCH_FLAGS ?=
comma := ,
NBVAL_FLAGS := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
# nbval re-executes the notebooks under another floating-point realisation than the one that stored them (two
# threads, this CPU's own kernels): one thread and the AVX2 kernels of MKL and ATen, as a CPU without AVX-512
# runs them. A stored digit that depends on the realisation fails here, not on a user's machine.
REALISATION := OMP_NUM_THREADS=1 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1

.PHONY: help env lock reproduce plan bench gpu-check site test test-fast lint format store-notebooks clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'
	@echo "  variables: SCALE=smoke|cpu|gpu|paper (default gpu with CUDA, else cpu), NOTEBOOKS=xsa,...,"
	@echo "             PARAMS='seeds=[0,1] steps=100' (notebook parameters, for reproduce),"
	@echo "             NPROC=8 (training processes per node, under torchrun)"
	@echo "  set-up:    PYTHON=python3.11, TORCH_INDEX=auto|URL|(empty), LOCK=.ci/requirements-lock.txt|(empty)"

env: $(STAMP) ## create .venv and install attnlab (editable) with its test tools

torch_index = $(if $(filter auto,$(TORCH_INDEX)),$(shell command -v nvidia-smi > /dev/null 2>&1 || \
	$(PYTHON) -c "import urllib.request as u; u.urlopen('$(TORCH_CPU_INDEX)/', timeout=5)" > /dev/null 2>&1 \
	&& echo $(TORCH_CPU_INDEX)),$(TORCH_INDEX))

$(STAMP): pyproject.toml $(LOCK)
	@$(PYTHON) -c "import sys; v = sys.version_info; sys.exit(0 if v >= (3, 11) else \
		f'attnlab needs Python >= 3.11; $(PYTHON) is {v.major}.{v.minor}. Run make with PYTHON=python3.11 (or newer).')"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(if $(torch_index),--extra-index-url $(torch_index)) \
		$(if $(LOCK),--constraint $(LOCK)) "torch==$(TORCH_VERSION)" -e ".[dev,hf,notebooks,corpora,site]"
	$(PY) -m ipykernel install --sys-prefix --name python3 > /dev/null
	touch $@

lock: $(STAMP) ## write .ci/requirements-lock.txt from the environment the tests pass in
	{ echo "# The exact versions \`make test\` passed with (\`make lock\` rewrites it); \`make env\` installs with them as pip"; \
	  echo "# constraints. torch is pinned by the Makefile (TORCH_VERSION), not here, so its CPU or CUDA build can differ."; \
	  $(PY) -m pip freeze --exclude-editable | grep -v -e "^-e " -e "^torch=="; } > .ci/requirements-lock.txt

reproduce: $(STAMP) ## run the notebooks (SCALE, NOTEBOOKS, PARAMS, NPROC) into build/, figures into figures/<scale>/
	$(PY) -m attnlab.runner.run $(if $(SCALE),--scale $(SCALE)) $(if $(NOTEBOOKS),--notebooks '$(NOTEBOOKS)') \
		$(if $(PARAMS),--params '$(subst ','\'',$(value PARAMS))') $(if $(NPROC),--nproc $(NPROC))

plan: $(STAMP) ## before a long run: every model a scale trains, its FLOPs and hours (SCALE, default gpu)
	$(PY) -m attnlab.runner.plan --scale $(or $(SCALE),gpu) $(if $(NOTEBOOKS),--notebooks $(subst $(comma), ,$(NOTEBOOKS)))

bench: $(STAMP) ## where the time goes: trainer vs bare loop, attention kinds, contribution weights, circuits, ODE solvers
	$(PY) -m attnlab.tools.bench $(BENCH_FLAGS)

gpu-check: $(STAMP) ## on a CUDA machine: tokens/s, MFU, memory of each paper's gpu-scale training
	$(PY) -m attnlab.tools.gpu_check $(GPU_CHECK_FLAGS)

site: $(STAMP) ## the results site (claims, executed notebooks, docs, API reference) as static HTML in build/site (SCALE, default cpu)
	$(PY) -m attnlab.tools.site --scale $(or $(SCALE),cpu) --out build/site-src
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet -f build/site-src/mkdocs.yml -d "$(CURDIR)/build/site"
	@echo "build/site/index.html (open it, or publish the folder as it is)"

test: $(STAMP) lint ## lint, unit tests, then nbval on the stored smoke-scale notebooks
	$(PY) -m pytest -q tests
	ATTNLAB_SCALE=smoke ATTNLAB_CHECK_CODE_KEYS=1 $(REALISATION) $(PY) -m pytest -q $(NBVAL_FLAGS) notebooks

test-fast: $(STAMP) lint ## lint and the unit tests not marked slow (torch.compile, torchrun): the quick loop
	$(PY) -m pytest -q -m "not slow" tests

lint: $(STAMP) ## ruff lint and format check (code and notebooks), mypy type check of the library
	$(VENV)/bin/ruff check lib tests notebooks
	$(VENV)/bin/ruff format --check lib tests notebooks
	$(VENV)/bin/mypy

format: $(STAMP) ## apply ruff fixes and formatting
	$(VENV)/bin/ruff check --fix lib tests notebooks
	$(VENV)/bin/ruff format lib tests notebooks

# attnlab.tools.examples stores the papers' notebooks (attnlab.runner.run --store) and the example ones, which
# `make reproduce` leaves out (they judge no claim and write no figures)
store-notebooks: $(STAMP) ## re-execute the notebooks at smoke scale on two threads and store their outputs (nbval checks them under another realisation)
	ATTNLAB_CHECK_CODE_KEYS=1 OMP_NUM_THREADS=2 $(PY) -m attnlab.tools.examples --store $(if $(NOTEBOOKS),--notebooks '$(NOTEBOOKS)')

clean: ## remove build outputs and the results cache (keeps .venv and downloaded data)
	rm -rf build figures/smoke
