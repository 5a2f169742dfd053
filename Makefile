# The two commands a newcomer needs: `make demo` and `make test`.
# Each sets up .venv/ (once) with the vLLM build that fits the machine.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test
setup:
	@bash scripts/setup.sh

demo: setup
	$(BIN)/llama4spec offline

test: setup
	$(BIN)/python -m pytest
