# fenecdb — `make run` starts it, `make test` tests it. Both install what is missing first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
# Node.js: the machine's when it is 22 or newer, else the Node.js 24 that scripts/install.sh puts in .cache/
# (scripts/install-node.sh). Its directory goes first on PATH, so that every recipe, script, npx and child process
# of a test that spawns `node` runs on it.
NODE_BIN := $(shell bash scripts/install-node.sh --bin-dir)
ifneq ($(NODE_BIN),)
export PATH := $(NODE_BIN):$(PATH)
endif
NODE := node
# One stamp per Node.js version: another Node.js (the machine's upgraded) reinstalls, rebuilding the native modules.
INSTALL_STAMP := .install-stamp-$(shell bash scripts/install-node.sh --version)
FILE ?= notes.fenec
PORT ?= 8080
SOURCES := $(shell find shared node router deploy test bench \( -path bench/before -o -path bench/peers \) -prune -o -name '*.ts' -print 2>/dev/null) tsconfig.json

# The benches' raw Faiss build (bench/raw-faiss/raw-faiss.cc): Faiss's own add, against the library the addon links.
RAW_FAISS := bench/raw-faiss/build/raw-faiss
FAISS_LIB ?= $(or $(FENEC_FAISS_LIB),/usr/lib/$(shell gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/libfaiss.a)

.PHONY: help install build test lint format timing-test mcp-test reliability chaos mcp-conformance test-tools console-screenshots run serve requests-bench search-bench match-bench tenants-bench failover-bench mcp-bench mcp-detail ingest-bench isolation-bench scaling-bench before-bench peers-bench embed-bench bench bench-summary clean

help:
	@echo "make run          build and start the local hosted stack: a router on 127.0.0.1:$(PORT), two tenant nodes, tenant demo, an agent token"
	@echo "make install      install what is missing, build, and put fenec, fenec-server, fenec-router on your PATH"
	@echo "make test         install what is missing, build, check the format and lint, run every test"
	@echo "make lint         the format check (prettier), the linter (typescript-eslint), the console's type-check; make format rewrites"
	@echo "make timing-test  the timed checks: the event loop's delay beside index builds and snapshots"
	@echo "make mcp-test     the MCP tests alone: tools, protocol, official clients, conformance suite, docs configs"
	@echo "make reliability  kill -9 rounds, fuzzing of /query and MCP, the forged-token and policy-escape tables (under 10 minutes; make test runs a part)"
	@echo "make chaos        replicated nodes (--nats) under kill -9, SIGSTOP, partitions: 3 nats-servers, 3 nodes, 2 routers, a checker, then the partition tests (about 5 minutes; CHAOS_SECONDS=60)"
	@echo "make serve FILE=F serve one file (its console: http://127.0.0.1:$(PORT)/_console/)"
	@echo "make console-screenshots  refresh docs/console/*.png from the console's browser tests"
	@echo "make requests-bench  /query against bare node:http; the router hop (--workers 1 and 2) against the node direct; a replicated write (--nats) against an unreplicated one"
	@echo "make search-bench    match, near, fuse against raw FTS5 and raw Faiss (BENCH_ROWS=20000 BENCH_UNIFORM_ROWS=5000: 90 s)"
	@echo "make match-bench     match against raw FTS5 at 50 000 rows, right after the load and warm (MATCH_ROWS=5000 for a short run)"
	@echo "make tenants-bench   10 000 tenants on one node: a cold open's and a warm request's latency (against the tenant alone on a node), open files, RSS (BENCH_TENANTS=1000 for a short run)"
	@echo "make failover-bench  a large replicated tenant's kill -9 to its next write on another node, with and without --standby (FAILOVER_ROWS=20000 for a short run)"
	@echo "make mcp-bench       MCP tool calls against the same statements through /query"
	@echo "make scaling-bench   near from each of two tenants on their own workers at once against one alone, CPU by thread, a 16-core node's estimate (SCALING_FLAGS='--workers 4 --tenants 4 --cores 3')"
	@echo "make isolation-bench a quiet tenant's reads beside a heavy tenant's fuse, oversized reads, load, timed-out statements; --workers 1/2/4 (BENCH_ROWS=100000)"
	@echo "make mcp-detail      the bytes a 10-row search answers at each detail (ids, fields, full)"
	@echo "make ingest-bench    fenec import over HTTP until near answers from the index, against raw SQLite + FTS5 and raw Faiss, the full load 3 times (INGEST_ROWS=5000 INGEST_ROUNDS=1 for a short run)"
	@echo "make before-bench   main ÷ the build before the worker threads (1d8f490, built into bench/before/): near, filtered near, match, fuse, RSS, row by id and its CPU (BEFORE_FLAGS='--workers 2 --cores 1', BENCH_ROWS=5000 for a short run)"
	@echo "make peers-bench    a one-file fenec-server ÷ LanceDB 0.39 (a Node.js server of its own, installed into bench/peers/): near, filtered near, recall@10, load until indexed, RSS (PEERS_FLAGS='--index ivf_pq', BENCH_ROWS=5000 for a short run)"
	@echo "make embed-bench     fenec import through an embedder of a fixed time a batch against its busy time; near by words (cached) against by vector (EMBED_ROWS=2000 EMBED_QUERIES=50 for a short run)"
	@echo "make bench        every bench with a baseline, then make bench-summary"
	@echo "make bench-summary  issue 29's targets (and issues 30 and 31's) as one table, from bench/results/ (RESULTS=DIR: another folder)"

# Dependencies, the build, and fenec, fenec-server and fenec-router on the PATH (scripts/link-bins.sh).
install: build
	bash scripts/link-bins.sh

# The install script is idempotent; the stamp only saves its checks on every make call.
$(INSTALL_STAMP): scripts/install.sh scripts/install-node.sh package.json package-lock.json examples/mcp-agent/package-lock.json $(wildcard native/debian-packages.txt native/*/build.sh native/*/binding.gyp native/*/*.cc native/*/src/*.cc native/*/src/*.c native/*/src/*.h)
	bash scripts/install.sh
	@touch $@

build: dist/.build-stamp

# tsc never removes what it wrote for a source since deleted: a test whose source is gone would still run.
dist/.build-stamp: $(INSTALL_STAMP) $(SOURCES)
	npx tsc -p tsconfig.json
	@find dist -name '*.js' | while read -r out; do src=$${out#dist/}; [ -f "$${src%.js}.ts" ] || rm -f "$$out" "$$out.map" "$${out%.js}.d.ts"; done
	@touch $@

# make test runs the format and lint checks, then every test under dist/test, the MCP ones among them: most files
# two at a time, then the timed ones alone (.mocharc.cjs says which). Both passes run, whichever fails.
# The build, the checks and the tools needed are independent once installed: made side by side (-j3), a minute
# of one core each is half a minute of the machine's two.
test: $(INSTALL_STAMP)
	$(MAKE) -j3 --output-sync=target build lint mcp-conformance test-tools
	FENEC_TESTS=parallel npx mocha; status=$$?; FENEC_TESTS=alone npx mocha && exit $$status

# Prettier's format (.prettierrc.json) and typescript-eslint with a 120-column cap (eslint.config.js); `make format` rewrites.
# The console's JavaScript is type-checked from its JSDoc (`// @ts-check`, console/tsconfig.json: checkJs, no output).
lint: $(INSTALL_STAMP)
	npx prettier --check --log-level warn .
	npx eslint .
	npx tsc -p console/tsconfig.json

format: $(INSTALL_STAMP)
	npx prettier --write --log-level warn .

MCP_TESTS := 'dist/test/shared/mcp/**/*.test.js' 'dist/test/integration/mcp/**/*.test.js' dist/test/docs/agents-and-mcp-configs.test.js

mcp-test: build mcp-conformance
	npx mocha --no-config --exit --timeout 60000 $(if $(CI),--forbid-only) $(MCP_TESTS)

# The full reliability run (docs/reliability.md); make test runs the same files at their small counts.
# Bounded: past 10 minutes the run is stopped, and the test helpers kill every server it started.
RELIABILITY_SEED ?=
reliability: build
	FENEC_RELIABILITY=full $(if $(RELIABILITY_SEED),FENEC_RELIABILITY_SEED=$(RELIABILITY_SEED)) timeout --kill-after=20s 600s \
	  $(NODE) node_modules/mocha/bin/mocha.js --no-config --exit --timeout 600000 $(if $(CI),--forbid-only) 'dist/test/reliability/**/*.test.js'

# Replication under faults (test/replication/chaos.ts): a long round, bounded; make test runs a short one.
CHAOS_SECONDS ?= 240
chaos: build test-tools
	CHAOS_SECONDS=$(CHAOS_SECONDS) timeout --kill-after=20s 480s $(NODE) dist/test/replication/chaos-main.js
	timeout --kill-after=20s 150s $(NODE) node_modules/mocha/bin/mocha.js --no-config --exit --timeout 60000 \
	  dist/test/replication/partition.chaos.js

# Timed checks (the event loop beside index work): a measure of speed, apart from make test, whose
# verdicts must not depend on the machine's load.
timing-test: build
	npx mocha --no-config --exit --timeout 120000 dist/test/integration/index-event-loop.timing.js

# The Debian packages only the tests need (Chromium for test/console, docker-compose for test/deploy), when missing.
test-tools:
	bash scripts/install-test-tools.sh

# Screenshots of each console page into docs/console/ (the console's browser tests, taking them).
console-screenshots: build test-tools
	FENEC_CONSOLE_SCREENSHOTS=docs/console npx mocha --no-config --exit --timeout 120000 dist/test/console/console.test.js

# The MCP conformance suite, from npm, into .cache/ (idempotent); it runs on the project's Node.js.
mcp-conformance: $(INSTALL_STAMP)
	bash scripts/install-mcp-conformance.sh

# A router and two tenant nodes as plain processes, data in ./data; Ctrl-C stops all three.
run: build
	PORT=$(PORT) OAUTH=$(OAUTH) bash scripts/run-stack.sh

# With the Node.js options of the program's #! line (node/cli/fenec-server.ts).
serve: build
	$(NODE) --expose-gc --max-semi-space-size=32 dist/node/cli/fenec-server.js --file $(FILE) --port $(PORT)

requests-bench: build
	$(NODE) dist/bench/requests-bench.js
	$(NODE) dist/bench/router-bench.js
	$(NODE) dist/bench/replication-bench.js

search-bench: build $(RAW_FAISS)
	$(NODE) dist/bench/search-bench.js

# Issue 12's match target alone: fenecdb's match against raw FTS5, cold and warm (MATCH_ROWS, MATCH_QUERIES).
match-bench: build
	$(NODE) dist/bench/match-bench.js

# 10 000 tenants on one node behind a router (BENCH_TENANTS, BENCH_MAX_OPEN): cold and warm latency, files, memory;
# an open tenant's requests against the same tenant alone on a node of its own (BENCH_ROUNDS, BENCH_REQUESTS).
tenants-bench: build
	$(NODE) dist/bench/tenants-bench.js

isolation-bench: build
	$(NODE) dist/bench/isolation-bench.js

# Issue 29, item 4: do tenants on workers of their own scale with the cores; what a larger node would serve.
SCALING_FLAGS ?=
scaling-bench: build
	$(NODE) dist/bench/scaling-bench.js $(SCALING_FLAGS)

# Issue 31: a large tenant's kill -9 to its next answered write on another node, with and without --standby.
failover-bench: build
	$(NODE) dist/bench/failover-bench.js

mcp-bench: build
	$(NODE) dist/bench/mcp-bench.js

mcp-detail: build
	$(NODE) dist/bench/mcp-detail.js

# Issue 29's baseline: the build before the worker threads, checked out and built into bench/before/ (bench/before.sh).
BEFORE_FLAGS ?=
before-bench: build
	bash bench/before.sh
	$(NODE) dist/bench/before-bench.js $(BEFORE_FLAGS)

# Issue 29's peers: LanceDB, installed from npm into bench/peers/ at bench time (bench/peers.sh), not a dependency.
PEERS_FLAGS ?=
peers-bench: build
	bash bench/peers.sh
	$(NODE) dist/bench/peers-bench.js $(PEERS_FLAGS)

ingest-bench: build $(RAW_FAISS)
	$(NODE) dist/bench/ingest-bench.js

embed-bench: build
	$(NODE) dist/bench/embed-bench.js

$(RAW_FAISS): bench/raw-faiss/raw-faiss.cc $(INSTALL_STAMP)
	@mkdir -p $(@D)
	g++ -std=c++17 -O3 -fopenmp -I$(or $(FENEC_FAISS_INCLUDE),/usr/include) -o $@ $< $(FAISS_LIB) -lopenblas -llapack

# One after the other, even under make -j: two benches at once would measure each other.
bench: build
	$(MAKE) requests-bench
	$(MAKE) search-bench
	$(MAKE) match-bench
	$(MAKE) mcp-bench
	$(MAKE) ingest-bench
	$(MAKE) isolation-bench
	$(MAKE) scaling-bench
	$(MAKE) tenants-bench
	$(MAKE) failover-bench
	$(MAKE) before-bench
	$(MAKE) peers-bench
	$(MAKE) embed-bench
	$(MAKE) bench-summary

# The targets' ratios, from whichever results files the benches wrote (bench/summary.ts); a bench not run says so.
RESULTS ?=
bench-summary: build
	$(NODE) dist/bench/summary.js $(RESULTS)

clean:
	rm -rf dist .install-stamp* bench/raw-faiss/build
