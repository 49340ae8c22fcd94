# perflab: every command an operator needs. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
VENV_STAMP := $(VENV)/.installed
BIN := $(CURDIR)/$(VENV)/bin
INVENTORY ?= inventory/local
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(BIN):$(PATH)

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(VENV_STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt -e .
	touch $@

.PHONY: venv
venv: $(VENV_STAMP) ## Create the controller virtualenv (.venv) from requirements.txt

.PHONY: test-unit
test-unit: $(VENV_STAMP) ## Unit tests of the perflab package (parsers, audit, CLI; k6 if installed) and mypy --strict
	$(BIN)/mypy --strict perflab tests/unit
	$(BIN)/pytest -q -p no:cacheprovider tests/unit

.PHONY: lint
lint: $(VENV_STAMP) ## yamllint, ansible-lint (production profile), syntax-check of every playbook
	$(BIN)/yamllint --strict .
	$(BIN)/ansible-lint --profile production
	@for p in playbooks/*.yml; do \
	  $(BIN)/ansible-playbook -i $(INVENTORY) --syntax-check $$p >/dev/null || exit 1; \
	done; echo "syntax-check: every playbook passes"

# The apps under test. Maven and the default JDK build them; the contract suite and the
# benchmark run them on the newest JDK under /usr/lib/jvm (PERFLAB_JAVA overrides it).
APPS ?= quarkus spring-webflux spring-mvc
MVN ?= mvn

.PHONY: apps
apps: ## Build every app under test: apps/<app>/target/perflab-<app>.jar
	$(MVN) -B -q -f apps/pom.xml package -DskipTests

.PHONY: test-apps
test-apps: $(VENV_STAMP) apps ## Build the apps, run the contract suite against each of APPS on a private TLS MariaDB
	$(BIN)/pytest -p no:cacheprovider tests/contract $(addprefix --app ,$(APPS))

.PHONY: bench-apps
bench-apps: $(VENV_STAMP) apps ## Benchmark each of APPS pinned to one core with k6: start time, max RSS, req/s on /greeting and /zipcodes
	$(BIN)/python tests/contract/bench_apps.py $(APPS)

.PHONY: db-reset
db-reset: $(VENV_STAMP) ## Restore the database's seed state (apps/db/seed.sql); the benchmark runner does it before every run
	$(require_inventory)
	$(BIN)/ansible-playbook -i "$(INVENTORY)" playbooks/db_reset.yml $(ANSIBLE_ARGS)
