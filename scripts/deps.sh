#!/usr/bin/env bash
# Installs what building and testing FerroBloom needs on Debian 12, if missing:
# redis-server (Debian's) and redis-tools (redis-cli: tests/docs.rs runs the
# documented transcripts with it), libclang-dev + clang (bindgen), pkg-config and
# python3-venv (for scripts/oracle.sh). Also checks that cargo is on PATH.
# Idempotent: installs nothing and prints nothing when all is present.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

if ! command -v cargo >/dev/null 2>&1; then
    echo "deps: cargo not found; install Rust (https://rustup.rs) first" >&2
    exit 1
fi

has_pkg() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

missing=()
for pkg in redis-server redis-tools libclang-dev clang pkg-config; do
    has_pkg "$pkg" || missing+=("$pkg")
done
# A python3 that cannot create venvs (Debian's without python3-venv).
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    missing+=(python3-venv)
fi

[[ ${#missing[@]} -eq 0 ]] && exit 0

SUDO=()
[[ "$(id -u)" -eq 0 ]] || SUDO=(sudo)

echo "deps: installing ${missing[*]}"
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

# Debian's package starts a system redis on 6379; stop the one this install
# started so `make run` can use that port.
for pkg in "${missing[@]}"; do
    if [[ "$pkg" == redis-server ]]; then
        "${SUDO[@]}" service redis-server stop >/dev/null 2>&1 || true
        if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
            "${SUDO[@]}" systemctl disable --now redis-server >/dev/null 2>&1 || true
        fi
    fi
done
