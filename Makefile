# Two commands for a new machine:
#   make run    set up .venv (once) and audit the embedded default data
#   make test   set up .venv (once) and run the test suite
# The tests come in two tiers; CI (.ci/run) runs both:
#   make test       the default suite: every test not marked slow, and the doctests of irtbayes/
#                   (pytest -m "not slow", in TEST_WORKERS=2 processes; about 5 minutes on 2 cores);
#                   exit 5 (no tests collected) fails
#   make test-slow  the slow statistical checks (pytest -m slow): long recoveries, published-estimate
#                   comparisons, subprocess fault injection, the notebooks that fit real data
# The Python interpreter (>= 3.12) is found by scripts/find-python; set IRTBAYES_PYTHON to choose one.

VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OUT ?= out/audit
# Test processes (pytest-xdist, files kept together so module fixtures are fitted once): 2 by default.
TEST_WORKERS ?= 2

.PHONY: run test test-slow lint benchmark docs dist clean

$(STAMP): pyproject.toml
	@py=$$(scripts/find-python) || exit 1; \
	 echo "Using $$py ($$($$py --version))"; \
	 [ -x $(BIN)/python ] || $$py -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,jax,dask]"
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/irtbayes audit --out $(OUT)

test: $(STAMP)
	@$(BIN)/python -m pytest -m "not slow" -n $(TEST_WORKERS) --dist loadfile; rc=$$?; \
	 [ $$rc -ne 5 ] || echo "pytest collected no tests: that counts as a failure" >&2; exit $$rc

test-slow: $(STAMP)
	@$(BIN)/python -m pytest -m slow -n $(TEST_WORKERS) --dist loadfile; rc=$$?; \
	 [ $$rc -ne 5 ] || echo "pytest collected no tests: that counts as a failure" >&2; exit $$rc

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy irtbayes

benchmark: $(STAMP)
	$(BIN)/python scripts/benchmark_fit.py

# The documentation site (mkdocs + mkdocstrings + mkdocs-jupyter) into site/, offline, warnings as errors.
docs: $(STAMP)
	@$(BIN)/python -c "import mkdocs, mkdocstrings_handlers.python, mkdocs_jupyter, material" 2>/dev/null || \
	 $(BIN)/python -m pip install --quiet -e ".[docs]"
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --clean

# The sdist, then the wheel built from it (as pip builds one from an index), into dist/.
dist: $(STAMP)
	@sdist=$$($(BIN)/python -c "from setuptools import build_meta as b; print(b.build_sdist('dist'))" | tail -n 1) && \
	 $(BIN)/python -m pip wheel --no-deps --no-build-isolation --quiet -w dist "dist/$$sdist" && ls -l dist

clean:
	rm -rf $(VENV) out
