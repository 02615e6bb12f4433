# Two entry points: `make demo` and `make test`. Both create .venv when it is missing.
# `make figure` runs the demo and copies its figure to docs/figures/ (the README shows it).
# `make wheel` builds dist/groupbias-*.whl (configs shipped as groupbias/configs/);
# `make test` runs `make lint` (ruff lint + format check, mypy on groupbias/, import-linter
# contracts of pyproject.toml: the stages as layers) and then the
# whole test suite, the wheel test included.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
STAMP  := $(VENV)/.installed-dev

.PHONY: demo figure test test-soak test-fast bench lint wheel install clean-venv docs-tables docs-check

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# torch is pinned (CPU build found locally; see README). allRank is installed without its
# dependencies: it pins torch<=1.8 and is used only by the parity test and the benchmark.
$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PIP) install torch==2.13.0
	$(PIP) install -e '.[dev]'
	$(PIP) install --no-deps allrank==1.4.3
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/groupbias

# the README's figure is the demo's
figure: demo
	cp runs/demo/demo.png docs/figures/demo.png

# the suite runs on every core (pytest-xdist; the tests are independent of one another),
# except the minutes-long reruns behind the documented tables (make docs-check) and the soak
# tests (make test-soak: fault injection, resumed rankers, the wheel); CI runs all three
test: lint
	$(PY) -m pytest -q -n auto -m "not documented and not soak" --durations=15

test-soak: $(STAMP)
	$(PY) -m pytest -q -n auto -m soak -p no:cacheprovider --durations=15

# the tests not marked slow, for the edit-test loop (tests/<stage>/ mirrors groupbias/<stage>/)
test-fast: $(STAMP)
	$(PY) -m pytest -q -n auto -m "not slow and not soak"

lint: $(STAMP)
	$(VENV)/bin/ruff check groupbias data_loaders experiments tools tests benchmarks
	$(VENV)/bin/ruff format --check groupbias data_loaders experiments tools tests benchmarks
	$(VENV)/bin/mypy groupbias
	$(VENV)/bin/lint-imports

wheel: $(STAMP)
	rm -rf build
	$(PIP) wheel --no-deps --no-build-isolation --no-index -w dist .

bench: $(STAMP)
	for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# `make docs-tables` reruns the experiments behind every documented table and rewrites them;
# `make docs-check` runs the tests that compare the longest of them with a fresh run (CI does)
docs-tables: $(STAMP)
	$(PY) -m tools.docs_tables

docs-check: $(STAMP)
	$(PY) -m pytest -q -m documented -p no:cacheprovider

clean-venv:
	rm -rf $(VENV)
