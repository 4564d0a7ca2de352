#!/usr/bin/env bash
# The slowest BF.ADD on a 1.08 GB windowed filter whose generations change
# under almost every add (docs/windows.md, "No long pauses"): starts its
# own redis-server on 127.0.0.1:${PORT:-7393} with the release module,
# fills 11 generation spans so that retired generations hold bits, then
# sends one BF.ADD every 0.25 s for 17 s and prints the slowest one's
# server time (INFO commandstats, reset before each add).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PORT=${PORT:-7393}
MODULE=${FERROBLOOM_MODULE:-$PWD/target/release/libferrobloom.so}
DIR=$(mktemp -d)
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" \
    --loadmodule "$MODULE" --daemonize yes --pidfile "$DIR/pid" --logfile "$DIR/log"
trap 'kill "$(cat "$DIR/pid")"; rm -rf "$DIR"' EXIT
until redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG; do sleep 0.2; done
cli() { redis-cli -p "$PORT" "$@"; }
cli BF.RESERVE big 0.001 360000000 WINDOW 9s GENERATIONS 8 >/dev/null
for g in $(seq 1 11); do
    redis-benchmark -p "$PORT" -P 64 -c 1 -n 400000 -r 100000000 \
        BF.ADD big "g$g:__rand_int__:__rand_int__" >/dev/null 2>&1
    sleep 0.3
done
slowest=0
for i in $(seq 1 68); do
    cli CONFIG RESETSTAT >/dev/null
    cli BF.ADD big "probe$i" >/dev/null
    usec=$(cli INFO commandstats | sed -n 's/^cmdstat_bf.add:calls=[0-9]*,usec=\([0-9]*\),.*/\1/p')
    ((usec > slowest)) && slowest=$usec
    sleep 0.25
done
echo "slowest BF.ADD: $slowest usec (MEMORY USAGE $(cli MEMORY USAGE big) bytes)"
