# FerroBloom developer entry points. `make help` lists them.

PORT        ?= 6379
MODULE_ARGS ?=
CARGO       ?= cargo

MODULE      := $(abspath target/release/libferrobloom.so)
DATA_DIR    := $(abspath data)
ORACLE_FILE := target/oracle-venv/REDISBLOOM_SO
REDIS_SERVER ?= /usr/bin/redis-server

.DEFAULT_GOAL := help
.PHONY: help deps oracle build run fmt lint test clean fuzz fuzz-build
# Prerequisites run in order (deps before build, lint before tests).
.NOTPARALLEL:

help:
	@echo "make run      build and start redis-server with FerroBloom on 127.0.0.1:\$$PORT (default 6379)"
	@echo "make test     lint, build, and run all tests (unit + integration against the RedisBloom oracle)"
	@echo "make build    release build of target/release/libferrobloom.so"
	@echo "make lint     cargo fmt --check + clippy -D warnings"
	@echo "make fmt      cargo fmt"
	@echo "make deps     install missing system packages (Debian 12)"
	@echo "make oracle   install RedisBloom 2.8.2 (reference) into target/oracle-venv"
	@echo "make fuzz     run each fuzz target for FUZZ_SECONDS (default 60) seconds"
	@echo "make clean    cargo clean (keeps data/)"

deps:
	@bash scripts/deps.sh

oracle:
	@bash scripts/oracle.sh

build:
	$(CARGO) build --release -p ferrobloom

run: deps build
	@mkdir -p $(DATA_DIR)
	@echo "FerroBloom on 127.0.0.1:$(PORT), data in $(DATA_DIR). Connect with:"
	@echo "  redis-cli -p $(PORT)"
	@echo "  e.g. redis-cli -p $(PORT) BF.RESERVE k 0.001 10000000"
	$(REDIS_SERVER) --port $(PORT) --bind 127.0.0.1 \
		--loadmodule $(MODULE) $(MODULE_ARGS) \
		--dir $(DATA_DIR) --dbfilename dump.rdb \
		--save "3600 1 300 100 60 10000"

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

test: deps oracle lint build
	FERROBLOOM_MODULE=$(MODULE) \
	REDISBLOOM_SO="$$(cat $(ORACLE_FILE))" \
	$(CARGO) test --release --workspace

clean:
	$(CARGO) clean

# Fuzzing: libFuzzer targets for the SCANDUMP header decoder, the LOADCHUNK
# chunk loader and the RDB/RESTORE value decoder (fuzz/). cargo-fuzz needs
# nightly-only compiler flags; RUSTC_BOOTSTRAP lets the stable toolchain
# accept them. Crashes land in fuzz/artifacts/<target>/.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := header chunk rdb
FUZZ_ENV     := RUSTC_BOOTSTRAP=1

fuzz-build:
	@command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	cd fuzz && $(FUZZ_ENV) $(CARGO) fuzz build -O

fuzz: fuzz-build
	@python3 scripts/fuzz-corpus.py
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		(cd fuzz && $(FUZZ_ENV) $(CARGO) fuzz run -O $$t corpus/$$t -- \
			-max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -print_final_stats=1) || exit 1; \
	done

# ---------------------------------------------------------------------------
# Reserved targets, not implemented yet:
#   bench        benchmarks (benches/), FerroBloom vs RedisBloom
#   test-ops     operational tests (persistence, replication, memory, restarts)
#   test-valkey  integration tests against Valkey instead of Redis
# ---------------------------------------------------------------------------
