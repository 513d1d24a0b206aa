# fenecdb — `make run` starts it, `make test` tests it. Both install what is missing first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
NODE := node
FILE ?= notes.fenec
PORT ?= 8080
SOURCES := $(shell find shared node router test bench -name '*.ts' 2>/dev/null) tsconfig.json

.PHONY: help install build test run serve requests-bench clean

help:
	@echo "make run          build and serve ./data/fenec.fenec on 127.0.0.1:$(PORT)"
	@echo "make test         install what is missing, build, run every test"
	@echo "make serve FILE=F serve one file"
	@echo "make requests-bench  /query against bare node:http"

install: .install-stamp

# The install script is idempotent; the stamp only saves its checks on every make call.
.install-stamp: scripts/install.sh package.json package-lock.json $(wildcard native/debian-packages.txt native/*/build.sh native/*/binding.gyp native/*/*.cc native/*/src/*.cc native/*/src/*.h)
	bash scripts/install.sh
	@touch $@

build: dist/.build-stamp

dist/.build-stamp: .install-stamp $(SOURCES)
	npx tsc -p tsconfig.json
	@touch $@

test: build
	npx mocha

run: build
	@mkdir -p data
	$(NODE) dist/node/cli/fenec-server.js --file data/fenec.fenec --port $(PORT)

serve: build
	$(NODE) dist/node/cli/fenec-server.js --file $(FILE) --port $(PORT)

requests-bench: build
	$(NODE) dist/bench/requests-bench.js

clean:
	rm -rf dist .install-stamp
