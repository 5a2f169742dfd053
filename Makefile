# The two commands a newcomer needs: `make demo` and `make test`.
# Each sets up .venv/ (once) with the vLLM build that fits the machine.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test
setup:
	@bash scripts/setup.sh

demo: setup
	$(BIN)/llama4spec offline

# Two lanes: the tests without an engine on every core (pytest-xdist), then the engine tests on two
# workers, each test file whole on one of them and the files sharing servers together, so that
# every shared server starts once (tests/engine/conftest.py). Each prints its 25 slowest tests; both
# lanes run, and the target fails when either does.
test: setup
	@status=0; \
	$(BIN)/python -m pytest tests/unit -n auto --durations=25 || status=$$?; \
	$(BIN)/python -m pytest tests/engine -n 2 --dist loadscope --no-loadscope-reorder --durations=25 || status=$$?; \
	exit $$status
