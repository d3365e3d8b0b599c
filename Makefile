# The README's two commands: `make demo` and `make test`. Both set up .venv from scratch when needed.
PYTHON ?= python3
VENV ?= .venv
# CPU wheel by default; users with a GPU override, e.g. TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128"
TORCH_SPEC ?= torch==2.13.0
PY := $(VENV)/bin/python
DEMO_OUT ?= out/demo

.PHONY: setup kernels demo test bench clean

# Every extra (see docs/install.md). pipelines/ installs as dataaudit.pipelines (pyproject's package-dir), for which
# setuptools' editable mode prints an informational "Editable installation" notice as a warning: filtered here.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH_SPEC)
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet -e '.[all,dev]'
	touch $@

setup: $(VENV)/.installed

# The audit's text kernels compiled ahead of time (docs/install.md): each command starts ~0.45 s faster. A no-op
# when built for these sources; where it cannot build (no C compiler), the commands use numba's JIT kernels.
kernels: setup
	-$(VENV)/bin/dataaudit build-kernels

# Generate the fixtures (planted defects + manifest) and audit them. Exit 1 from the audit means
# "bad samples found", which is the point of the demo; only 2 (usage/I/O error) fails the target.
demo: kernels
	$(PY) -m fixtures.generate fixtures/data
	$(VENV)/bin/dataaudit audit fixtures/data fixtures/chat/jsonl fixtures/images/webdataset --config fixtures/audit.toml --out $(DEMO_OUT); \
	  rc=$$?; [ $$rc -le 1 ] || exit $$rc
	@echo "open $(DEMO_OUT)/report.html"

# Every core (pytest-xdist): a worker takes a test file whole, so a file's costly fixture (the kernel build, a Ray
# cluster) is made once; a session server several files share (moto, a local Ray) starts once per worker.
test: setup
	$(PY) -m pytest -q -n auto --dist loadfile

bench: kernels
	bash benchmarks/run_all.sh

clean:
	rm -rf $(VENV) out fixtures/data .pytest_cache
