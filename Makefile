# kafkaops — every target sets up what it needs on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# the test suite in two processes (pytest-xdist; tests/conftest.py says what runs together); WORKERS= runs it in one
WORKERS ?= -n 2

.PHONY: setup test demo fleet-demo fleet-report-png bench bench-operator bench-fleet dev-cluster image clean soak

# the fleet's JVM reader (operator/kafkaops/fleet/jvm_rows.py), compiled against the jars PySpark ships
# (fleet/jvm_build.py; docker/install.sh builds it the same way in the EXTRAS=fleet image)
JAVA_SRC := operator/kafkaops/fleet/jvm/ManifestRows.java
JAR      := operator/kafkaops/fleet/jvm/kafkaops-fleet.jar

# Spark's class archive (fleet/class_archive.py: the JVM maps Spark's classes from one file instead of
# loading them from its jars), recorded again whenever it no longer matches this JVM, Spark or the jar
setup: $(STAMP) $(JAR)
	$(PY) -m kafkaops.fleet.class_archive --if-stale

$(STAMP): pyproject.toml
	@# PySpark (the fleet pipeline) needs Java 17+, and its JVM reader a compiler: install Debian's JDK when
	@# there is none.
	command -v javac >/dev/null 2>&1 || { \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq default-jdk-headless; }
	@# The fleet report's browser test (and `make fleet-report-png`) drive headless Chromium.
	command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium; } \
	  || echo "chromium could not be installed: the fleet report's browser tests will skip"; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

$(JAR): $(JAVA_SRC) $(STAMP)
	$(PY) -m kafkaops.fleet.jvm_build --output $@

test: setup
	$(PY) -m pytest -q $(WORKERS) $(PYTEST_ARGS)

demo: setup
	$(PY) -m kafkaops.demo

# snapshot two example clusters and run the fleet pipeline on examples/ -> fleet-demo/report/report.html
fleet-demo: setup
	$(PY) -m kafkaops.fleet.demo --out fleet-demo

# docs/fleet-report.png: the top of fleet-demo's report.html, as a browser shows it
fleet-report-png: fleet-demo
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,2200 \
	  --screenshot=docs/fleet-report.png file://$(CURDIR)/fleet-demo/report/report.html

bench: setup
	$(PY) bench/batcher_bench.py --topics 10000 --backend noida,fake
	$(PY) bench/apply_bench.py --topics 5000
	$(PY) bench/operator_bench.py --topics 2000

# 10,000 KafkaTopics at once, the operator as the image installs it: .venv-lean is the plain install
# (made and kept by tests/packaging/test_lean_install.py); BENCH_ARGS="--worker-limit 0" for no limit
bench-operator: setup
	$(PY) -m pytest -q tests/packaging/test_lean_install.py -k no_extra_packages
	$(PY) bench/operator_bench.py --topics 10000 --operator-python .venv-lean/bin/python $(BENCH_ARGS)

# the fleet pipeline at 100k, 300k and 1M topics (about 20 minutes on 2 cores)
bench-fleet: setup
	$(PY) bench/fleet_bench.py --sizes 100000,300000,1000000 --baseline 100000,300000

# the seeded chaos soak (docs/reliability.md): make soak DURATION=1h SEED=16 [SOAK_ARGS="--mode zk --replicas 2"]
DURATION ?= 120
SEED     ?=
soak: setup
	$(PY) bench/soak.py --duration $(DURATION) $(if $(SEED),--seed $(SEED)) $(SOAK_ARGS)

dev-cluster: setup
	$(VENV)/bin/kafkaops dev-cluster --brokers 3 --port 19092

# The image (Dockerfile, docs/deploying.md); needs a Docker daemon with BuildKit.
# EXTRAS=fleet adds Spark, Arrow and a JRE; the tag then ends in -fleet.
IMAGE  ?= ghcr.io/kafkaops/kafkaops:0.1.0
EXTRAS ?=
image:
	@command -v docker >/dev/null 2>&1 || { echo "make image: docker is not installed (the image needs Docker with BuildKit; see docs/deploying.md)" >&2; exit 1; }
	@docker info >/dev/null 2>&1 || { echo "make image: no Docker daemon is reachable (docker info failed): start one or set DOCKER_HOST; see docs/deploying.md" >&2; exit 1; }
	DOCKER_BUILDKIT=1 docker build --build-arg EXTRAS=$(EXTRAS) -t $(IMAGE)$(if $(EXTRAS),-$(EXTRAS)) .

clean:
	rm -rf $(VENV) .venv-lean .pytest_cache build *.egg-info operator/*.egg-info fleet-demo
	rm -f operator/kafkaops/fleet/jvm/*.jsa operator/kafkaops/fleet/jvm/*.jsa.*
