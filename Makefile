# pipestate developer targets. Everything real lives in scripts/; see README.md.
# The examples are a module of their own in the workspace (go.work): ./... from the
# root does not reach them, so the default package list names both modules.
#
#   make test                  real servers up, go test -race -count=1 on both modules, servers down
#   make test PKGS=./provider/... TESTFLAGS='-run CAS -v'
#   make bench [COUNT=5]       real servers up, the paired benchmarks (scripts/bench.sh: each
#                              call beside raw client code), then their table
#                              (internal/testkit/benchpair/benchtable); output in .bench/out.txt
#   make bench-readme          docs/benchmarks.md's performance table from .bench/out.txt
#   make sim [BACKEND=memory] [DURATION=1m]
#                              a long simulation run (providertest/sim) on memory, miniredis,
#                              dynamodb, sqlite or toy, or of the state stores
#                              (state/statetest/statesim) on memstate, redisstate, ddbstate or tiered: seeds, the first failure shrunk, ops/s and
#                              the coverage of operation and fault kinds (scripts/sim.sh)
#   make lint [LINT_PKGS=...]  gofmt -l, go vet, staticcheck (pinned)
#   make api                   api/current.txt: the exported API snapshot of both modules
#   make api-check             fails when api/current.txt is stale, or when an identifier
#                              changed since the last release's api/vX.Y.Z.txt is not
#                              named in CHANGELOG.md's Unreleased section (scripts/api.sh)
#   make api-release V=v0.2.0  api/v0.2.0.txt at a release
#   make build [VERSION=v0.2.0] bin/pipestate, stamped with VERSION (default: git describe),
#                              which 'pipestate version' prints
#   make servers               start servers for local work; then: source .servers/env
#   make servers-stop

SHELL        := /bin/bash
GO           ?= go
PKGS         ?= ./... ./examples/...
TESTFLAGS    ?=
TEST_TIMEOUT ?= 30m
COUNT        ?= 5
SERVERS_DIR  ?= .servers
LINT_PKGS    ?= ./... ./examples/...
VERSION      ?= $(shell git describe --tags --dirty 2>/dev/null)

BACKEND      ?= memory
DURATION     ?= 1m

.PHONY: all build test sim bench bench-readme lint api api-check api-release servers servers-stop

all: lint test

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/pipestate ./cmd/pipestate

test:
	bash scripts/ensure-cc.sh
	bash scripts/with-servers.sh $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)

sim:
	bash scripts/sim.sh $(BACKEND) $(DURATION)

bench:
	bash scripts/ensure-cc.sh
	mkdir -p .bench
	set -o pipefail; GO=$(GO) COUNT=$(COUNT) bash scripts/with-servers.sh bash scripts/bench.sh | tee .bench/out.txt
	$(GO) run ./internal/testkit/benchpair/benchtable < .bench/out.txt

bench-readme:
	$(GO) run ./internal/testkit/benchpair/benchtable -readme docs/benchmarks.md < .bench/out.txt

lint:
	bash scripts/lint.sh $(LINT_PKGS)

api:
	bash scripts/api.sh write

api-check:
	bash scripts/api.sh check

api-release:
	bash scripts/api.sh release $(V)

servers:
	bash scripts/servers.sh start $(SERVERS_DIR)
	@echo "# servers running; load their addresses with:  source $(SERVERS_DIR)/env"
	@cat $(SERVERS_DIR)/env

servers-stop:
	bash scripts/servers.sh stop $(SERVERS_DIR)
