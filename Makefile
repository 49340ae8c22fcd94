# perflab: every command an operator needs. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
VENV_STAMP := $(VENV)/.installed
BIN := $(CURDIR)/$(VENV)/bin
INVENTORY ?= inventory/local
# Where benchmark results go (and where report/compare read them): RESULTS=, else the environment's
# PERFLAB_RESULTS_DIR (the perflab commands' own), else results/.
RESULTS ?= $(or $(PERFLAB_RESULTS_DIR),results)
export PERFLAB_RESULTS_DIR := $(abspath $(RESULTS))
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(BIN):$(PATH)
# vegeta, built on the controller by `make vegeta` (see there), at the version the loadgen role
# installs: its default loadgen_vegeta_version is the one place that says it.
VEGETA_VERSION := $(shell sed -n 's/^loadgen_vegeta_version: *//p' roles/loadgen/defaults/main.yml)
VEGETA := build/vegeta

# (Defined before the rules that name it among their prerequisites: make expands those as it reads them.)
# async-profiler (Apache-2.0), the app's profiler: its jar on Maven Central carries the agent
# library for each platform (linux-x64/, linux-arm64/libasyncProfiler.so), fetched with the apps'
# Maven like any build dependency and never on a lab host at run time. The app host loads it into
# the running JVM for the measured window (roles/app/files/perflab_profile.py). Its version is
# perflab/profile.py's ASYNC_PROFILER_VERSION, as is the library's place (async_profiler_lib).
ASYNC_PROFILER_VERSION := $(shell sed -n 's/^ASYNC_PROFILER_VERSION = "\(.*\)"$$/\1/p' perflab/profile.py)
ASYNC_PROFILER_DIR := build/async-profiler-$(ASYNC_PROFILER_VERSION)
ASYNC_PROFILER := $(ASYNC_PROFILER_DIR)/linux-x64/libasyncProfiler.so

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

# TechEmpower's FrameworkBenchmarks checkout, whose Quarkus the matrix measures beside ours (tests/matrix_lab,
# apps/peers/tfb-quarkus.yml): CI keeps it beside the clone. Exported so that the lab tests find it.
PERFLAB_TFB_DIR ?= $(abspath $(CURDIR)/../shared/peers/tfb-57d92fb)
export PERFLAB_TFB_DIR

# What make test and test-lab need and cannot install, checked before they install or run anything
# (scripts/test-needs.sh: wrk2's source, TechEmpower's checkout; Go where vegeta is not built yet).
.PHONY: test-needs
test-needs:
	@[ -x $(VEGETA) ] || { $(require_go); }
	@scripts/test-needs.sh roles/loadgen/defaults/main.yml

.PHONY: test
test: test-needs $(VENV_STAMP) apps-prereqs lab-prereqs apps $(VEGETA) ## Everything CI runs: lint, unit tests, the report in Chromium, the apps' contract suite, the lab end-to-end tests (the SSH lab's share from the start, beside the rest)
	@$(start_ssh_lab) \
	$(start_checks) \
	PERFLAB_TEST_LAB_WAITS_FOR=$(CHECKS_STATUS):$(SSH_LAB_UP_DONE) $(MAKE) --no-print-directory $(BUILT) test-local-lab; \
	$(wait_checks) \
	$(wait_ssh_lab)

.PHONY: dashboards
dashboards: $(VENV_STAMP) ## Generate the Grafana dashboards dashboards/*.json from perflab/dashboards (commit the output; a unit test fails on drift)
	$(BIN)/python -m perflab.dashboards dashboards

.PHONY: roledocs
roledocs: $(VENV_STAMP) ## Generate the variables section of every roles/*/README.md from the role's meta/argument_specs.yml and defaults (commit the output; a unit test fails on drift)
	$(BIN)/python -m perflab.roledoc roles

.PHONY: schemas
schemas: $(VENV_STAMP) ## Generate the JSON Schema of every file of a run, perflab/schemas/*.schema.json, from perflab/rundir.py's models (commit the output; a unit test fails on drift)
	$(BIN)/python -m perflab.rundir perflab/schemas

HOST_PROGRAMS = $(wildcard roles/*/files/*.py roles/*/files/*/*.py playbooks/files/*.py) roles/app/files/perflab-app-ready

.PHONY: test-unit
test-unit: $(VENV_STAMP) $(ASYNC_PROFILER) ## Unit tests of the perflab package (parsers, audit, CLI), mypy --strict, the scenario loader (tests/deploy)
	@scripts/apt-need.sh "the unit tests (the wrk2 Lua scripts run under luajit)" luajit
	$(BIN)/mypy --strict perflab tests/unit
	@# The programs the roles put on lab hosts: standalone files (each its own module, standard library only).
	@for f in $(HOST_PROGRAMS); do $(BIN)/mypy --strict --no-error-summary $$f || exit 1; done; \
	  echo "mypy --strict: every host program passes ($(words $(HOST_PROGRAMS)) files)"
	$(CHECK_ENV) $(BIN)/pytest -q -p no:cacheprovider -n auto tests/unit tests/deploy

.PHONY: test-report
test-report: $(VENV_STAMP) ## The HTML report from real tool output and bad input, opened in headless Chromium (screenshot: build/test-artifacts/report.png)
	@scripts/apt-need.sh "the report test (headless Chromium)" chromium fonts-dejavu-core
	$(BIN)/mypy --strict tests/report
	$(CHECK_ENV) $(BIN)/pytest -q -p no:cacheprovider tests/report

.PHONY: lint
lint: $(VENV_STAMP) ## yamllint, ansible-lint (production profile), syntax-check of every playbook
	$(BIN)/yamllint --strict .
	$(BIN)/ansible-lint --profile production
	@for p in playbooks/*.yml; do \
	  $(BIN)/ansible-playbook -i $(INVENTORY) --syntax-check $$p >/dev/null || exit 1; \
	done; echo "syntax-check: every playbook passes"

# The apps under test, each described by its manifest (apps/<name>/perflab-app.yml, apps/peers/<name>.yml:
# `perflab app list`). Maven and the default JDK build the project's own; the contract suite and the
# benchmark run them on the newest JDK under /usr/lib/jvm (PERFLAB_JAVA overrides it).
# APPS= empty: test-apps and bench-apps take the project's own apps, compare every app claiming SCENARIO.
APPS ?=
OWN_APPS = $(or $(APPS),$(shell $(BIN)/perflab app list --names --builtin))
# The contract suite also runs the deploy-time variants: MVC on virtual threads, Quarkus' greeting
# on a worker thread (report 3). `make test-apps CONTRACT_VARIANTS=` leaves them out.
CONTRACT_VARIANTS ?= spring-mvc+virtual quarkus+worker
MVN ?= mvn
# The built-in manifests build with "${MVN:-mvn}".
export MVN

# The project's apps build with Maven (their manifests' build): every target that deploys an app
# gets it from apt where the controller has no mvn.
.PHONY: build-prereqs
build-prereqs:
	@command -v $(MVN) >/dev/null || scripts/apt-need.sh "building the project's apps (their manifests run mvn)" maven

# The engine of the contract suite's private DB server: mariadb (the lab's default) or postgresql
# (`make test-apps DB_ENGINE=postgresql`: the distribution's PostgreSQL, 15 on Debian 12).
DB_ENGINE ?= mariadb
CONTRACT_DB_PACKAGES_mariadb = mariadb-server mariadb-client
CONTRACT_DB_PACKAGES_postgresql = postgresql postgresql-client

.PHONY: apps-prereqs
apps-prereqs:
	@test -n "$(CONTRACT_DB_PACKAGES_$(DB_ENGINE))" || { echo "perflab: DB_ENGINE=$(DB_ENGINE): the contract suite runs on mariadb or postgresql" >&2; exit 2; }
	@scripts/apt-need.sh "building the apps and their contract suite's private $(DB_ENGINE)" maven $(CONTRACT_DB_PACKAGES_$(DB_ENGINE)) openssl

.PHONY: apps
apps: ## Build every app under test: apps/<app>/target/perflab-<app>.jar
	$(MVN) -B -q -f apps/pom.xml package -DskipTests

.PHONY: test-apps
test-apps: $(VENV_STAMP) apps-prereqs apps ## Build the apps, run the contract suite against each of APPS (and CONTRACT_VARIANTS) on a private TLS MariaDB (DB_ENGINE=postgresql: PostgreSQL)
	$(CHECK_ENV) $(BIN)/pytest -p no:cacheprovider tests/contract --db-engine $(DB_ENGINE) $(addprefix --app ,$(OWN_APPS) $(CONTRACT_VARIANTS))

.PHONY: bench-apps
bench-apps: $(VENV_STAMP) apps-prereqs apps $(VEGETA) ## Benchmark each of APPS pinned to one core with vegeta (the lab's request sequence, build/vegeta): start time, max RSS, req/s on /greeting and /zipcodes
	$(BIN)/python tests/contract/bench_apps.py $(OWN_APPS)

# The lab. INVENTORY selects it (default: the local containers); ANSIBLE_ARGS passes options
# to ansible-playbook, e.g. ANSIBLE_ARGS=--check or ANSIBLE_ARGS="--tags common".
ANSIBLE_ARGS ?=
# DB_ENGINE=mariadb|mysql|postgresql on a lab command's line: the db hosts' lab_db_engine for that command
# (`make lab-up DB_ENGINE=postgresql`, then `make bench|compare|reproduce ... DB_ENGINE=postgresql`); left
# out, the inventory's. (`make test-apps DB_ENGINE=`: the contract suite's private server, below.)
ifeq ($(origin DB_ENGINE),command line)
override ANSIBLE_ARGS += -e lab_db_engine=$(DB_ENGINE)
endif
define require_inventory
	@test -e "$(INVENTORY)" || { echo "perflab: inventory '$(INVENTORY)' does not exist: use INVENTORY=inventory/local (the default) or a copy of inventory/example" >&2; exit 2; }
endef

.PHONY: lab-up
lab-up: $(VENV_STAMP) ## Bring up the lab (INVENTORY=inventory/local: containers; or your SSH inventory)
	$(require_inventory)
	@scripts/ensure-docker-engine.sh "$(INVENTORY)"
	$(BIN)/ansible-playbook -i "$(INVENTORY)" playbooks/site.yml $(ANSIBLE_ARGS)

.PHONY: lab-down
lab-down: $(VENV_STAMP) ## Remove the local containers and network (SSH labs: stop the lab's services); secrets, results stay
	$(require_inventory)
	@scripts/ensure-docker-engine.sh "$(INVENTORY)"
	$(BIN)/ansible-playbook -i "$(INVENTORY)" playbooks/lab_down.yml $(ANSIBLE_ARGS)

.PHONY: lab-status
lab-status: $(VENV_STAMP) ## Each host: its tier, its services; the health of every Prometheus target; exits non-zero naming each host, service or target down
	$(require_inventory)
	@$(BIN)/ansible-playbook -i "$(INVENTORY)" playbooks/lab_status.yml $(ANSIBLE_ARGS)

.PHONY: db-reset
db-reset: $(VENV_STAMP) ## Restore the database's seed state (apps/db/seed.sql); the benchmark runner does it before every run
	$(require_inventory)
	PERFLAB_RUN_PID=$$$$ $(BIN)/ansible-playbook -i "$(INVENTORY)" playbooks/db_reset.yml $(ANSIBLE_ARGS)

# The app under test: APP= a manifest's name or path. Options left empty keep the inventory's (or
# the role's) defaults; variants not chosen keep the manifest's defaults.
APP ?=
PROFILE ?=
VARIANT ?=
THREADS ?=
DISPATCH ?=
# VARIANT="threads=virtual max_threads=400"; THREADS= and DISPATCH= are shorthands for threads= and dispatch=.
VARIANTS = $(strip $(VARIANT) $(if $(THREADS),threads=$(THREADS)) $(if $(DISPATCH),dispatch=$(DISPATCH)))
VARIANT_OPTIONS = -e '{"app_variants": "$(VARIANTS)"}'
# Checks APP and its variants, then builds its artifact when it is missing or older than its sources
# (the manifest's build: mvn for the project's own apps); one message and exit 2 for bad input.
APP_BUILD = $(BIN)/perflab app build '$(APP)' --variant '$(VARIANTS)'

.PHONY: deploy
deploy: $(VENV_STAMP) build-prereqs ## Deploy APP=<name or manifest path> [PROFILE=default|io-vs-worker|virtual-threads-db] [VARIANT="k=v ..."] (THREADS=platform|virtual, DISPATCH=io|worker); stops the previous app
	$(require_inventory)
	@$(APP_BUILD)
	PERFLAB_RUN_PID=$$$$ $(BIN)/ansible-playbook -i "$(INVENTORY)" playbooks/deploy.yml -e app_name='$(APP)' $(VARIANT_OPTIONS) \
	  $(if $(PROFILE),-e app_profile=$(PROFILE)) $(ANSIBLE_ARGS)

# vegeta (MIT), the load generator any machine can get: built on the controller from the Go
# module proxy (about 10 s with a warm module cache) and copied to the loadgen hosts by the bench.
# Go is the controller's own, from PATH: vegeta's go.mod asks for 1.22, and Debian 12's golang-go
# is 1.19, too old for its dependencies, so apt cannot provide it.
GO_MIN := 1.22
define require_go
go=$$(command -v go) && [ "$$(printf '%s\n' $(GO_MIN) "$$(go env GOVERSION | sed 's/^go//')" | sort -V | head -n1)" = $(GO_MIN) ] \
  || { echo "perflab: vegeta $(VEGETA_VERSION) needs Go $(GO_MIN) or newer on PATH ($${go:-no go}$${go:+: $$(go env GOVERSION)}): put go.dev/dl's release in /usr/local/go (Debian 12's golang-go is 1.19), or set loadgen_vegeta_url and loadgen_vegeta_sha256 to a release" >&2; exit 2; }
endef
$(VEGETA):
	@$(require_go)
	@echo "perflab: building vegeta $(VEGETA_VERSION) into $(VEGETA) (go install, from the Go module proxy)"
	GOBIN=$(CURDIR)/build CGO_ENABLED=0 go install -trimpath github.com/tsenart/vegeta/v12@$(VEGETA_VERSION)

.PHONY: vegeta
vegeta: $(VEGETA) ## Build vegeta (the loadgen role's loadgen_vegeta_version) on the controller (build/vegeta; needs Go): the load generator TOOL=auto falls back to

$(ASYNC_PROFILER):
	@command -v $(MVN) >/dev/null || scripts/apt-need.sh "fetching async-profiler from Maven Central" maven
	$(MVN) -B -q dependency:copy -Dartifact=tools.profiler:async-profiler:$(ASYNC_PROFILER_VERSION) \
	  -DoutputDirectory=$(ASYNC_PROFILER_DIR)
	$(PYTHON) -m zipfile -e $(ASYNC_PROFILER_DIR)/async-profiler-$(ASYNC_PROFILER_VERSION).jar $(ASYNC_PROFILER_DIR)
	@test -f $@ || { echo "perflab: async-profiler $(ASYNC_PROFILER_VERSION)'s jar has no $(@:$(ASYNC_PROFILER_DIR)/%=%)" >&2; exit 2; }
	touch $@

.PHONY: async-profiler
async-profiler: $(ASYNC_PROFILER) ## Fetch async-profiler (perflab/profile.py's ASYNC_PROFILER_VERSION) from Maven Central and extract its agent libraries (build/async-profiler-<version>/linux-x64/libasyncProfiler.so)

# bench, compare and sweep: vegeta where this run may use it (TOOL=auto or vegeta) and Go can
# build it; without Go the loadgen role says what else to set (loadgen_vegeta_url).
.PHONY: vegeta-if-needed
vegeta-if-needed:
	@if [ "$(TOOL)" != wrk2 ] && [ ! -x $(VEGETA) ] && command -v go >/dev/null; then $(MAKE) --no-print-directory $(VEGETA); fi

# A benchmark run (playbooks/bench.yml). Empty options keep the scenario's values.
SCENARIO ?=
RATE ?=
DURATION ?=
WARMUP ?=
TOOL ?= auto
DB_DELAY_MS ?= 0
DB_CPU_HOG ?= 0
SLO_P99_MS ?=
LATENCY_MS ?=
# The scenario's parameters and its requests' weights as run, words NAME=VALUE (perflab scenario show lists them):
# SET="name=alice", WEIGHTS="write=0.2 read=0.8". Empty: the scenario file's.
SET ?=
WEIGHTS ?=
# What every run of a bench, compare or sweep shares; the rate is the sweep's own, the variants each app's.
RUN_OPTIONS = -e loadgen_duration='$(DURATION)' \
  -e loadgen_warmup='$(WARMUP)' -e loadgen_tool='$(TOOL)' -e bench_db_delay_ms='$(DB_DELAY_MS)' -e bench_db_cpu_hog='$(DB_CPU_HOG)' \
  $(if $(LATENCY_MS),-e loadgen_latency_ms='$(LATENCY_MS)') $(if $(PROFILE),-e app_profile=$(PROFILE)) \
  $(if $(SET),-e '{"loadgen_scenario_set": "$(SET)"}') $(if $(WEIGHTS),-e '{"loadgen_scenario_weights": "$(WEIGHTS)"}') \
  $(if $(PROFILE_APP),-e bench_profile_app='$(PROFILE_APP)' -e bench_async_profiler_lib=$(abspath $(ASYNC_PROFILER)))
BENCH_OPTIONS = -e loadgen_scenario='$(SCENARIO)' -e loadgen_rate='$(RATE)' \
  $(if $(SLO_P99_MS),-e loadgen_slo_p99_ms='$(SLO_P99_MS)') $(RUN_OPTIONS)

# PROFILE_APP=cpu|alloc|lock|wall: the app's profile over the measured window (async-profiler, README: "Where
# the app's time goes"); empty or off: none, the default (its cost is above the 3% a default may cost).
PROFILE_APP ?=
# The agent library a profiled run loads: a prerequisite of every target that runs (bench, compare, sweep,
# reproduce), fetched only when PROFILE_APP asks for a profile.
PROFILE_PREREQS = $(if $(filter-out off,$(PROFILE_APP)),$(ASYNC_PROFILER))

# REPEAT=N: each run N times on fresh JVMs (bench, compare; sweep: each rate), tagged as one repetition group; the
# report and compare's summary give the median and the range, and say which apps cannot be told apart.
REPEAT ?= 1

.PHONY: bench
bench: $(VENV_STAMP) build-prereqs $(PROFILE_PREREQS) ## Run APP= SCENARIO= [RATE=] [DURATION=] [WARMUP=] [TOOL=auto|wrk2|vegeta] [DB_DELAY_MS=] [DB_CPU_HOG=] [LATENCY_MS=] [VARIANT=] [REPEAT=N] [PROFILE_APP=cpu|alloc|lock|wall|off]: DB reset, fresh app, warm-up, measured run -> results/<run-id>/
	$(require_inventory)
	@$(APP_BUILD)
	@$(MAKE) --no-print-directory vegeta-if-needed
	$(if $(filter-out 1,$(REPEAT)),$(call compare_apps,$(APP)),$(bench_once))

# One bench run (playbooks/bench.yml). It fails where the playbook failed, and for a run judged INVALID (it
# did not measure what it claims: its verdict says why), saying so in a last line; VALID and WARN succeed.
# make exits 2 for either failure, the line tells them apart. The bench writes the run's directory into
# PERFLAB_RUN_RECORD; perflab judge reads its recorded verdict (and exits 1 for INVALID).
define bench_once
record=$$(mktemp) && trap 'rm -f "$$record"' EXIT && \
PERFLAB_RUN_RECORD=$$record PERFLAB_RUN_PID=$$$$ $(BIN)/ansible-playbook -i "$(INVENTORY)" playbooks/bench.yml \
  -e app_name='$(APP)' $(VARIANT_OPTIONS) $(BENCH_OPTIONS) $(ANSIBLE_ARGS) && run=$$(cat "$$record") && \
{ [ -z "$$run" ] || $(BIN)/perflab judge "$$run" >/dev/null; [ $$? -ne 1 ] || \
  { echo "perflab: make bench: run $${run##*/} is INVALID (its verdict is above)" >&2; exit 1; }; }
endef

# `make lab`: the lab's main job from nothing, the first of the README's two commands.
LAB_APP ?= quarkus
LAB_SCENARIO ?= zipcodes

# The lab-up (docker.io, debootstrap's base image, the hosts' convergence) needs nothing the app's
# build (Maven) or vegeta's (Go) makes, nor they it: they run side by side, their lines interleaved.
.PHONY: lab
lab: ## Bring up the lab and run its main job: one benchmark (LAB_APP=quarkus, LAB_SCENARIO=zipcodes) -> results/
	@echo "perflab: make lab: the lab-up beside the build of $(LAB_APP) and of the load generator vegeta, then one run"
	$(MAKE) --no-print-directory -j3 --output-sync=line lab-up lab-build vegeta-if-needed
	$(MAKE) --no-print-directory bench APP=$(LAB_APP) SCENARIO=$(LAB_SCENARIO)

.PHONY: lab-build
lab-build: $(VENV_STAMP) build-prereqs
	@echo "perflab: building $(LAB_APP) (its manifest's build) while the lab comes up"
	@$(BIN)/perflab app build '$(LAB_APP)'
	@echo "perflab: $(LAB_APP) built"

# $(call compare_apps,APPS): perflab compare (perflab/compare.py) with the bench's options; a bad REPEAT= is
# refused in one line naming the make target that was run (PERFLAB_AS, perflab/cli.py).
compare_apps = PERFLAB_AS='make $@' $(BIN)/perflab compare --inventory "$(INVENTORY)" --scenario '$(SCENARIO)' --variants '$(VARIANTS)' \
  --repeat '$(REPEAT)' $(if $(1),--apps '$(1)') -- $(BENCH_OPTIONS) $(ANSIBLE_ARGS)

.PHONY: compare
compare: $(VENV_STAMP) build-prereqs $(PROFILE_PREREQS) ## Run SCENARIO= [RATE=] ... with every app claiming it (or APPS="a b") in turn under identical conditions, then a table of the results
	$(require_inventory)
	@$(MAKE) --no-print-directory vegeta-if-needed
	$(call compare_apps,$(APPS))

# `make reproduce REPORT=1|2|3|4|all`: a field report's experiment on the lab (perflab/reproduce.py), each
# arm a bench run; RATE=, DURATION=, WARMUP= replace the experiment's own.
REPORT ?=

.PHONY: reproduce
reproduce: $(VENV_STAMP) build-prereqs $(PROFILE_PREREQS) ## Run field report REPORT=1|2|3|4|all's experiment on the lab [RATE=] [DURATION=] [WARMUP=] [TOOL=]: the report's table beside the lab's, each relation marked reproduced, not reproduced or not runnable here
	$(require_inventory)
	@$(MAKE) --no-print-directory vegeta-if-needed
	$(BIN)/perflab reproduce --report '$(REPORT)' --inventory "$(INVENTORY)" --rate '$(RATE)' --duration '$(DURATION)' \
	  --warmup '$(WARMUP)' -- -e loadgen_tool='$(TOOL)' $(ANSIBLE_ARGS)

# `make sweep`: one bench run per rate, in increasing order, until a run is incomplete, INVALID
# or its corrected p99 exceeds the SLO (the scenario's slo_p99_ms, or SLO_P99_MS=).
RATES ?=
START ?=
STEP ?=
MAX ?=

.PHONY: sweep
sweep: $(VENV_STAMP) build-prereqs $(PROFILE_PREREQS) ## Raise the rate for APP= SCENARIO= (RATES="100 200 400" or START= STEP= MAX=) until the verdict fails or p99 > SLO [SLO_P99_MS=] [DURATION=] [REPEAT=N: each rate N times, the median and range] ...: max sustainable throughput -> results/<id>-sweep/
	$(require_inventory)
	@$(APP_BUILD)
	@$(MAKE) --no-print-directory vegeta-if-needed
	PERFLAB_AS='make $@' $(BIN)/perflab sweep --app '$(APP)' --scenario '$(SCENARIO)' --inventory "$(INVENTORY)" \
	  $(if $(RATES),--rates '$(RATES)') $(if $(START),--start '$(START)') $(if $(STEP),--step '$(STEP)') \
	  $(if $(MAX),--max '$(MAX)') $(if $(SLO_P99_MS),--slo-p99-ms '$(SLO_P99_MS)') --repeat '$(REPEAT)' \
	  -- $(VARIANT_OPTIONS) $(RUN_OPTIONS) $(ANSIBLE_ARGS)

# perflab report exits 3 when it wrote the page but listed problems (on stderr and in the page).
.PHONY: report
report: $(VENV_STAMP) ## One self-contained HTML page from RESULTS (default results/): latency spectra, sweeps, per-tier utilization, verdicts, what each app costs -> RESULTS/report.html
	@$(BIN)/perflab report --results "$(PERFLAB_RESULTS_DIR)" || [ $$? -eq 3 ]

# perflab history counts the runs it leaves out (not judged) on stderr and exits 0.
.PHONY: history
history: $(VENV_STAMP) ## One CSV row per judged run in RESULTS (default results/): app, variant, scenario, rate, tool, profile, verdict, key figures -> RESULTS/history.csv (DuckDB: read_csv_auto)
	@$(BIN)/perflab history --results "$(PERFLAB_RESULTS_DIR)"

# `make watch`: the lab's tiers live in the terminal, from the inventory's lab_prometheus_url
# (PROMETHEUS_URL= overrides it). INTERVAL= seconds between refreshes (default 5).
PROMETHEUS_URL ?=
INTERVAL ?=

.PHONY: watch
watch: $(VENV_STAMP) ## Live terminal view: per tier CPU (busy/allotted cores), memory, saturation, errors; the busiest tier; the run in progress [PROMETHEUS_URL=] [INTERVAL=]; q quits
	$(require_inventory)
	@url="$(PROMETHEUS_URL)"; \
	if [ -z "$$url" ]; then \
	  url=$$($(BIN)/ansible -i "$(INVENTORY)" localhost -m ansible.builtin.debug \
	    -a 'msg=prometheus={{ lab_prometheus_url | default("http://127.0.0.1:9090") }}' 2>/dev/null \
	    | sed -n 's/.*prometheus=\([^" ]*\).*/\1/p'); \
	  test -n "$$url" || { echo "perflab: cannot read lab_prometheus_url from $(INVENTORY): set PROMETHEUS_URL=http://..." >&2; exit 2; }; \
	fi; \
	exec $(BIN)/perflab watch --prometheus "$$url" $(if $(INTERVAL),--interval $(INTERVAL))

.PHONY: test-bench
test-bench: $(VENV_STAMP) ## The benchmark runs, on any lab (PERFLAB_TEST_INVENTORY, default inventory/local): test-lab's (every app on zipcodes, books-orders twice with REPEAT=2, verify refusals, bad input, netem removal, faults mid-run) and the matrix's other cells, which make test leaves out (tests/matrix_lab: every app on every scenario, ours beside TechEmpower's Quarkus on plaintext-json)
	@scripts/test-needs.sh roles/loadgen/defaults/main.yml "$(PERFLAB_TFB_DIR)"
	$(BIN)/pytest -v -p no:cacheprovider tests/bench_runs tests/fault_runs tests/user_app tests/matrix_lab

.PHONY: test-reproduce
test-reproduce: $(VENV_STAMP) apps-prereqs apps ## Report 2 through make reproduce, on the local lab or PERFLAB_TEST_INVENTORY's (not in make test: its arms need the machine to themselves): the thread cap INVALID and attributed to the request threads, the others holding the rate
	$(BIN)/pytest -v -p no:cacheprovider tests/reproduce_lab

# The lab's tests run on two labs at once: the local containers, and five fresh machines reached
# over SSH (PERFLAB_TEST_LAB=ssh: tests/sshlab.py), each with a results directory of its own. `make
# test` starts the SSH lab's share first (its lab-up, a vegeta and a wrk2 run from two loadgen
# hosts, faults in a run's measured phase, the lock taken over), beside lint, the unit, report and
# contract tests and the local lab's share. The local lab's runs wait for its lab-up (SSH_LAB_UP_DONE), and
# after it it yields the machine to the local lab: its pytest runs at nice 19 in a session of its own, whose
# group is at nice 19 from then on (scripts/yielding.sh says why nice alone was not enough), and its machines
# with an eighth of the local lab's CPU weight (tests/sshlab.py), so
# that the local lab's runs, whose figures its tests judge, are measured nearly as if alone. (Side
# by side at equal weight, a CI simulation's short run on the local lab kept 41 of 200 req/s, p99 33
# s, while the SSH lab deployed a JVM and ran three ansible-playbooks.) The SSH lab's own tests
# there judge what such a machine records, not a quiet one: the shares two loadgen hosts sent and
# merged, and the faults a run's verdict names (tests/fault_runs, which judge no figure: on the
# local lab they were 11 of its minutes), and Spring PetClinic's two runs on its own database and workload
# (tests/user_app, likewise). One of its measurements needs a quiet machine and comes
# last, once the local lab's share has ended (tests/labkit.py: after_the_local_lab): the lock test's
# first run, whose statements per request show that the refused runs left the app alone. (Field
# report 2, whose arms must hold their rate, is make test-reproduce's: after the local lab's share
# it took CI past its 90 minutes.) Its lines are prefixed 'ssh-lab | '; test-lab and test fail if
# either fails.
# tests/matrix_lab (every app of the project on every scenario, ours beside TechEmpower's Quarkus: 23 min of runs
# here) is not in them: `make test-bench` runs it. Beside the rest it fails (its cells assert VALID runs without an
# error, which a busy machine denies), and after the rest it took CI past its 90 minutes.
LOCAL_LAB_TESTS := tests/lab tests/watch tests/dashboards tests/judge_lab tests/bench_runs tests/sweep_lab
SSH_LAB_TESTS := tests/ssh_lab tests/fault_runs tests/user_app tests/postgresql_db
SSH_LAB_RESULTS := $(CURDIR)/build/ssh-lab-results
# Written once the SSH lab's lab-up has ended (tests/sshlab.py lab_up_ended; here too, should its pytest end before):
# the local lab's runs wait for it, and the SSH lab's share runs at everyone's weight until then (yielding.sh's
# --group-nice 0) and yields from then on.
SSH_LAB_UP_DONE := $(SSH_LAB_RESULTS)/lab-up-done

# The SSH lab's share in the background (its exit status in SSH_LAB_RESULTS/exit-status), then the
# status of what ran beside it and of the SSH lab's, together: recipes put their own part between.
# What runs beside the SSH lab's share takes the apps and vegeta as built (make -o): rebuilding a jar
# while the SSH lab deploys it would hand it a half-written file.
BUILT := -o apps -o $(VEGETA)
define start_ssh_lab
rm -rf $(SSH_LAB_RESULTS) && mkdir -p $(SSH_LAB_RESULTS) && \
{ PERFLAB_TEST_LAB=ssh PERFLAB_RESULTS_DIR=$(SSH_LAB_RESULTS) PERFLAB_TEST_LAB_UP_DONE=$(SSH_LAB_UP_DONE) \
  scripts/yielding.sh --group-nice 0 $(BIN)/pytest -v -p no:cacheprovider --durations=8 $(SSH_LAB_TESTS); \
  echo $$? > $(SSH_LAB_RESULTS)/exit-status; [ -e $(SSH_LAB_UP_DONE) ] || echo none > $(SSH_LAB_UP_DONE); } 2>&1 | tee $(SSH_LAB_RESULTS)/pytest.log | sed -u 's/^/ssh-lab | /' &
endef
define wait_ssh_lab
here=$$?; wait; ssh=$$(cat $(SSH_LAB_RESULTS)/exit-status 2>/dev/null || echo 1); \
[ $$ssh -eq 0 ] || scripts/test-failures.sh "$@: the SSH lab's tests" $(SSH_LAB_RESULTS)/pytest.log; \
echo "$@: the rest exited $$here, the SSH lab's tests (lines 'ssh-lab | ') $$ssh"; \
[ $$here -eq 0 ] && [ $$ssh -eq 0 ]
endef
# make test: lint and the unit, report and contract tests in the background too, two at a time, each one's
# output whole when it ends (their exit status in CHECKS_STATUS), beside the local lab's bad-input tests
# and its lab-up from nothing, which mostly wait on apt and debootstrap. The local lab's first run waits
# for CHECKS_STATUS and SSH_LAB_UP_DONE (PERFLAB_TEST_LAB_WAITS_FOR, tests/conftest.py): a run measured
# while the unit tests or the SSH lab's lab-up take both cores would judge that, not the app.
# The tests that run make themselves (make history, deploy, report) get none of this make's flags
# (CHECK_ENV): a make under -j2 would hand them a jobserver they cannot reach, and make warns on stderr.
CHECK_ENV ?=
CHECKS_STATUS := $(CURDIR)/build/checks-exit-status
define start_checks
rm -f $(CHECKS_STATUS) && mkdir -p $(dir $(CHECKS_STATUS)) && \
{ $(MAKE) --no-print-directory -j2 --output-sync=target $(BUILT) test-unit test-apps lint test-report \
  CHECK_ENV='env -u MAKEFLAGS -u MFLAGS'; \
  echo $$? > $(CHECKS_STATUS).part && mv $(CHECKS_STATUS).part $(CHECKS_STATUS); } 2>&1 | tee $(CHECKS_STATUS).log | sed -u 's/^/checks | /' &
endef
# After the local lab's share: its status becomes 1 where the checks failed (wait_ssh_lab reads it).
define wait_checks
lab=$$?; wait; checks=$$(cat $(CHECKS_STATUS) 2>/dev/null || echo 1); \
[ $$checks -eq 0 ] || scripts/test-failures.sh "$@: lint, the unit, report and contract tests" $(CHECKS_STATUS).log; \
echo "$@: lint, the unit, report and contract tests (lines 'checks | ') exited $$checks"; \
[ $$checks -eq 0 ] && (exit $$lab);
endef

.PHONY: lab-prereqs
lab-prereqs:
	@scripts/apt-need.sh "the lab tests (make watch in tmux, probes)" tmux procps iproute2 curl openssl

.PHONY: test-lab
test-lab: test-needs $(VENV_STAMP) apps-prereqs lab-prereqs apps $(VEGETA) ## End-to-end tests on the local lab (bad input, lab-up from nothing, idempotence, make watch in tmux, every dashboard query, judging, every app on zipcodes, books-orders twice, a sweep, failures, lab-down) and beside them on an SSH lab (two loadgen hosts, faults mid-run, the run lock)
	@$(start_ssh_lab) \
	PERFLAB_TEST_LAB_WAITS_FOR=$(SSH_LAB_UP_DONE) $(MAKE) --no-print-directory $(BUILT) test-local-lab; \
	$(wait_ssh_lab)

.PHONY: test-local-lab
test-local-lab: $(VENV_STAMP) apps-prereqs lab-prereqs apps $(VEGETA) ## Only the local lab's share of test-lab
	$(BIN)/pytest -v -p no:cacheprovider --durations=15 $(LOCAL_LAB_TESTS)

.PHONY: test-ssh-lab
test-ssh-lab: $(VENV_STAMP) apps-prereqs apps $(VEGETA) ## Only the SSH lab's share of test-lab: five fresh machines over SSH, lab-up, runs from two loadgen hosts, faults mid-run, the run lock, lab-down
	PERFLAB_TEST_LAB=ssh $(BIN)/pytest -v -p no:cacheprovider --durations=8 $(SSH_LAB_TESTS)

.PHONY: bench-loadgen
bench-loadgen: $(VENV_STAMP) build-prereqs $(VEGETA) ## On a lab that is up: loadgen CPU seconds per 1,000 requests and the highest rate its cores sustain, for wrk2 and vegeta (a sweep each)
	$(require_inventory)
	@$(BIN)/perflab app build quarkus
	INVENTORY="$(INVENTORY)" $(BIN)/python tests/bench/bench_loadgen.py

.PHONY: bench-loadgen-alone
bench-loadgen-alone: $(VENV_STAMP) $(VEGETA) ## No lab needed: each load generator alone on one core against nginx on another (wrk2 from PERFLAB_WRK2_ARCHIVE, vegeta with and without its exporter): CPU-s per 1,000 requests, the highest rate one core sends within 80%
	@scripts/apt-need.sh "the load generators' own benchmark (a static server; wrk2's build)" nginx-light build-essential libssl-dev zlib1g-dev curl
	$(BIN)/python tests/bench/bench_loadgen_alone.py $(if $(RATES),--rates '$(RATES)')

.PHONY: bench-overhead
bench-overhead: $(VENV_STAMP) build-prereqs $(VEGETA) ## On a lab that is up: a warm make bench and a two-app make compare, every step's seconds and the total beyond the load (target 20 s a run)
	$(require_inventory)
	@$(BIN)/perflab app build quarkus
	INVENTORY="$(INVENTORY)" $(BIN)/python tests/bench/bench_overhead.py

.PHONY: bench-lab
bench-lab: $(VENV_STAMP) ## Wall time of a cold lab-up (base image present, no containers) and of a warm re-run
	$(BIN)/python tests/bench/bench_lab.py
