# Two commands for a new machine:
#   make run    set up .venv (once) and audit the embedded default data
#   make test   set up .venv (once) and run the test suite
# The Python interpreter (>= 3.12) is found by scripts/find-python; set IRTBAYES_PYTHON to choose one.

VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OUT ?= out/audit

.PHONY: run test test-slow lint benchmark docs clean

$(STAMP): pyproject.toml
	@py=$$(scripts/find-python) || exit 1; \
	 echo "Using $$py ($$($$py --version))"; \
	 [ -x $(BIN)/python ] || $$py -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,jax]"
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/irtbayes audit --out $(OUT)

test: $(STAMP)
	@$(BIN)/python -m pytest -m "not slow"; rc=$$?; \
	 [ $$rc -ne 5 ] || echo "pytest collected no tests: that counts as a failure" >&2; exit $$rc

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow

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

clean:
	rm -rf $(VENV) out
