# Task runner. Every variable is overridable: make test KAFKA_VERSION=4.1.1 TEST_BASE_PORT=29100
#
# Versions (why these, see pyproject.toml and compose/pom.xml):
#   KAFKA_VERSION  the broker and kafka-tools jars Maven resolves (any KRaft release 3.3 to 4.x;
#                  `verifier setup --kafka-versions A,B` resolves more, side by side)
#   KAFKA_CLIENTS_VERSION  the Java producer the Java generator runs (default KAFKA_VERSION)
#   PySpark        pinned in pyproject.toml; the Spark Kafka connector jars follow the
#                  installed PySpark version exactly
PYTHON        ?= python3
VENV          ?= .venv
KAFKA_VERSION ?= 4.1.1
# the kafka-clients version the Java generator (producers/java, --client java) is built
# against at setup: the client under test, by default the broker's version
KAFKA_CLIENTS_VERSION ?= $(KAFKA_VERSION)
PROFILE       ?= full
# SELFTEST=1: after each scenario, `verifier selftest` on its run (the report shows the table)
SELFTEST      ?=
OUT           ?= runs
NODES         ?= 3
# The test cluster lives on its own ports and folder so it never meets a cluster you
# started yourself with `verifier cluster up` (default base port 9100).
TEST_BASE_PORT ?= 19100
TEST_STATE_DIR ?= .state/test-cluster-$(TEST_BASE_PORT)
PYTEST_ARGS   ?=

BIN := $(VENV)/bin
export KAFKA_VERSION KAFKA_CLIENTS_VERSION

.PHONY: setup system-deps jars test unit integration test-chaos chaos chaos-quick cluster-up cluster-down lint clean distclean

setup: $(VENV)/.installed jars system-deps ## Python packages in .venv, JVM jars in .jars

system-deps:
	@compose/system-deps.sh

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

jars: $(VENV)/.installed
	$(BIN)/verifier setup

# Unit and integration tiers. The integration tier starts a real 3-node cluster (and a
# local Spark) on TEST_BASE_PORT; it is stopped afterwards even when tests fail.
test: setup
	VERIFIER_TEST_BASE_PORT=$(TEST_BASE_PORT) VERIFIER_TEST_STATE_DIR=$(TEST_STATE_DIR) \
	  $(BIN)/pytest tests/unit tests/integration $(PYTEST_ARGS); \
	  rc=$$?; $(BIN)/verifier cluster down --state-dir $(TEST_STATE_DIR) >/dev/null 2>&1; exit $$rc

unit: setup
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

integration: setup
	VERIFIER_TEST_BASE_PORT=$(TEST_BASE_PORT) VERIFIER_TEST_STATE_DIR=$(TEST_STATE_DIR) \
	  $(BIN)/pytest tests/integration $(PYTEST_ARGS); \
	  rc=$$?; $(BIN)/verifier cluster down --state-dir $(TEST_STATE_DIR) >/dev/null 2>&1; exit $$rc

# The chaos tier (tests/chaos, marker `chaos`): the quick profile end to end, with its
# outputs checked. Minutes long, so not part of `make test`.
test-chaos: setup
	$(BIN)/pytest tests/chaos -m chaos $(PYTEST_ARGS)

chaos: setup ## every mode under every fault, side by side
	$(BIN)/verifier chaos --profile $(PROFILE) --out $(OUT) $(if $(filter 1 yes true,$(SELFTEST)),--selftest)

cluster-up: setup
	$(BIN)/verifier cluster up --nodes $(NODES)

cluster-down:
	$(BIN)/verifier cluster down

lint:
	$(BIN)/ruff check verifier producers streaming tests benchmarks

clean: ## stop local clusters, remove runs and state (keeps .venv and .jars)
	-for d in .state/*/; do [ -f "$$d/cluster.json" ] && $(BIN)/verifier cluster down --state-dir "$$d"; done; true
	rm -rf .state runs out .pytest_cache

distclean: clean
	rm -rf $(VENV) .jars *.egg-info
