# FerroBloom developer entry points. `make help` lists them.

PORT        ?= 6379
MODULE_ARGS ?=
CARGO       ?= cargo

MODULE      := $(abspath target/release/libferrobloom.so)
DATA_DIR    := $(abspath data)
ORACLE_FILE := target/oracle-venv/REDISBLOOM_SO
REDIS_SERVER ?= /usr/bin/redis-server

.DEFAULT_GOAL := help
.PHONY: help deps oracle servers build run fmt lint test test-ops test-valkey test-redis74 clean fuzz fuzz-build bench
# Prerequisites run in order (deps before build, lint before tests).
.NOTPARALLEL:

help:
	@echo "make run      build and start redis-server with FerroBloom on 127.0.0.1:\$$PORT (default 6379)"
	@echo "make test     lint, build, and run all tests (unit + integration against the RedisBloom oracle)"
	@echo "make test-ops operational tests: a real Redis Cluster (resharding, failover, sharded filters)"
	@echo "make test-valkey   run the integration suite on Valkey 8.1, then Valkey 9.1"
	@echo "make test-redis74  run the integration suite on Redis 7.4.1"
	@echo "make build    release build of target/release/libferrobloom.so"
	@echo "make bench    benchmarks: core (criterion) and system (FerroBloom vs RedisBloom: docs/performance.md); BENCH_QUICK=1 for a short run"
	@echo "make lint     cargo fmt --check + clippy -D warnings"
	@echo "make fmt      cargo fmt"
	@echo "make deps     install missing system packages (Debian 12)"
	@echo "make oracle   install RedisBloom 2.8.2 (reference) into target/oracle-venv"
	@echo "make servers  install Redis 7.4.1, Valkey 8.1 and Valkey 9.1 into target/servers"
	@echo "make fuzz     run each fuzz target for FUZZ_SECONDS (default 60) seconds"
	@echo "make clean    cargo clean (keeps data/)"

deps:
	@bash scripts/deps.sh

oracle:
	@bash scripts/oracle.sh

# Redis 7.4.1, Valkey 8.1 and 9.1 in target/servers: the ACL and defrag
# tests (tests/ops.rs) run them, and test-valkey / test-redis74 run the
# whole suite on them.
servers:
	@bash scripts/servers.sh

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
	$(CARGO) clippy -p ferrobloom $(addprefix --test ,$(OPS_TESTS)) -- -D warnings

test: deps oracle servers lint build
	FERROBLOOM_MODULE=$(MODULE) \
	REDISBLOOM_SO="$$(cat $(ORACLE_FILE))" \
	$(CARGO) test --release --workspace

# Operational tests: the integration tests marked `test = false` in
# Cargo.toml, which `cargo test` and `make test` leave out (tests/cluster.rs:
# a Redis Cluster of six nodes, resharding, failover, sharded filters).
OPS_TESTS = $(shell $(CARGO) metadata --no-deps --format-version 1 | python3 -c \
	'import json, sys; print(" ".join(t["name"] for p in json.load(sys.stdin)["packages"] \
	if p["name"] == "ferrobloom" for t in p["targets"] if t["kind"] == ["test"] and not t["test"]))')

test-ops: deps build
	@test -n "$(strip $(OPS_TESTS))" || { echo "test-ops: no test marked test = false in Cargo.toml" >&2; exit 1; }
	FERROBLOOM_MODULE=$(MODULE) \
	$(CARGO) test --release -p ferrobloom $(addprefix --test ,$(OPS_TESTS))

# Benchmarks, not part of `make test`: the criterion benchmarks of the core,
# then benches/system/, FerroBloom against RedisBloom 2.8.2 on the same
# redis-server (about 15 minutes), which writes docs/performance.md and
# docs/performance.png. BENCH_QUICK=1: a short run, written to
# target/bench-system/; BENCH_ROUNDS=N (default 5); see benches/system/config.rs.
# The build without fill tracking is what BF.ADD is compared with to
# measure what tracking costs.
UNTRACKED_DIR := $(abspath target/untracked)

bench: deps oracle build
	$(CARGO) build --release -p ferrobloom --features untracked-fill --target-dir $(UNTRACKED_DIR)
	$(CARGO) bench --bench core $(if $(filter-out 0,$(BENCH_QUICK)),-- --quick)
	FERROBLOOM_MODULE=$(MODULE) \
	FERROBLOOM_UNTRACKED_MODULE=$(UNTRACKED_DIR)/release/libferrobloom.so \
	REDISBLOOM_SO="$$(cat $(ORACLE_FILE))" \
	$(CARGO) bench --bench system

clean:
	$(CARGO) clean

# Fuzzing: libFuzzer targets for the SCANDUMP header decoder, the LOADCHUNK
# chunk loader, the RDB/RESTORE value decoder and the windowed filter's
# RDB/RESTORE decoder (fuzz/), and per type a round trip that must give
# back an identical value: SCANDUMP -> LOADCHUNK (and the AOF rewrite's
# header and chunks) for Bloom and Cuckoo filters, DUMP -> RESTORE (their
# AOF rewrite) for windowed filters. cargo-fuzz needs
# nightly-only compiler flags; RUSTC_BOOTSTRAP lets the stable toolchain
# accept them. Crashes land in fuzz/artifacts/<target>/.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := header chunk rdb window_rdb cuckoo_header cuckoo_chunk cuckoo_rdb \
		roundtrip cuckoo_roundtrip window_roundtrip cms_rdb cms_roundtrip topk_rdb topk_roundtrip \
		tdigest_rdb tdigest_roundtrip
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

# The integration suite with FerroBloom on another server (REDIS_SERVER);
# the RedisBloom 2.8.2 oracle stays on Debian's Redis 7.0 (the harness uses
# REDISBLOOM_SERVER, default /usr/bin/redis-server, for it). Each server's
# run goes to the end (every test binary: --no-fail-fast); the target fails
# if any failed. The CLI's tests too: they move data between FerroBloom's
# server and the oracle's, `ferrobloom migrate` restamping each DUMP
# payload to the destination's RDB version.
SERVERS_DIR := $(abspath target/servers)
SUITE_ON = status=0; for s in $(1); do \
		echo "== integration suite on $(SERVERS_DIR)/$$s"; \
		REDIS_SERVER=$(SERVERS_DIR)/$$s \
		FERROBLOOM_MODULE=$(MODULE) \
		REDISBLOOM_SO="$$(cat $(ORACLE_FILE))" \
		$(CARGO) test --release --no-fail-fast -p ferrobloom -p ferrobloom-core -p ferrobloom-cli \
			|| status=1; \
	done; exit $$status

test-valkey: deps oracle servers build
	@$(call SUITE_ON,valkey-8.1 valkey-9.1)

test-redis74: deps oracle servers build
	@$(call SUITE_ON,redis-7.4)
