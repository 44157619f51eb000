# minikafka: `make run` starts a broker on 127.0.0.1:9092 with data in ./data; `make test` runs the suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test unit conformance clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m minikafka serve --host 127.0.0.1 --port 9092 --data-dir ./data

test: $(STAMP)
	$(BIN)/python -m pytest -q

unit: $(STAMP)
	$(BIN)/python -m pytest -q -m unit

# The integration tests against a real Apache Kafka 4.x (jars from Maven Central, see bench/kafka/;
# tests/conftest.py fetches them once and starts one broker; without Java/Maven the tests skip).
conformance: $(STAMP)
	MINIKAFKA_TARGET=kafka $(BIN)/python -m pytest -q -rs -m "integration or kafka_reference"

clean:
	rm -rf $(VENV) data .cache build *.egg-info
