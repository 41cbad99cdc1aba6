# kafkaops — every target sets up what it needs on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup test demo bench dev-cluster clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@# PySpark (the fleet pipeline) needs a Java runtime (17+); install Debian's when there is none.
	command -v java >/dev/null 2>&1 || { \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq default-jre-headless; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

test: setup
	$(PY) -m pytest -q $(PYTEST_ARGS)

demo: setup
	$(PY) -m kafkaops.demo

bench: setup
	$(PY) bench/batcher_bench.py --topics 10000 --backend noida,fake
	$(PY) bench/apply_bench.py --topics 5000
	$(PY) bench/operator_bench.py --topics 2000

dev-cluster: setup
	$(VENV)/bin/kafkaops dev-cluster --brokers 3 --port 19092

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info operator/*.egg-info
