#!/usr/bin/env bash
# Installs what kvgate needs to build, run and test on Debian 12, idempotently:
# nothing is downloaded when everything is already there. Called by
# scripts/run.sh and scripts/test.sh; safe to run by hand.
#   install-deps.sh          build + runtime + test tools
#   install-deps.sh --run    build + runtime only
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_PKGS=(build-essential pkg-config make clang libclang-rt-14-dev clang-format
  libuv1-dev node-llhttp libssl-dev libxxhash-dev libpcre2-dev libzmq3-dev
  libmsgpack-dev libhiredis-dev libcjson-dev libyaml-dev openssl ca-certificates)
TEST_PKGS=(redis-server python3 python3-zmq python3-msgpack python3-yaml prometheus
  jargon-text curl procps iproute2 nginx haproxy wrk chromium)

want=("${BUILD_PKGS[@]}")
[ "${1:-}" = "--run" ] || want+=("${TEST_PKGS[@]}")

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm by command, not by package: a machine may have them from
# another source (NodeSource's nodejs bundles npm, and Debian's npm package
# would conflict with it).
if [ "${1:-}" != "--run" ] && ! { command -v node && command -v npm; } >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
# kubectl (for `kubectl kustomize` on deploy/) by command too: Debian's
# kubernetes-client would conflict with a kubectl installed another way.
# deploy/ needs kustomize v5 (kubectl 1.27+); Debian 12's kubernetes-client
# is 1.20, with which tests/integration/deploy_manifests.sh skips.
if [ "${1:-}" != "--run" ] && ! command -v kubectl >/dev/null 2>&1; then
  missing+=(kubernetes-client)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${1:-}" != "--run" ]; then
  # npm test tools (reference tokenizers, chat templates, the openai SDK):
  # into tests/node/node_modules, which git ignores. Reinstalled only when
  # package.json changed since the last install.
  stamp=tests/node/node_modules/.kvgate-stamp
  if [ ! -f "$stamp" ] || [ tests/node/package.json -nt "$stamp" ]; then
    echo "install-deps: npm install in tests/node" >&2
    (cd tests/node && npm install --no-audit --no-fund --no-package-lock --loglevel=error >/dev/null)
    touch "$stamp"
  fi
  # The coding agents the agents test drives (two native binaries, ~800 MB,
  # ~15 s from the registry): tests/agents/node_modules, which git ignores.
  # Their install scripts are not run: the test runs the platform binaries.
  stamp=tests/agents/node_modules/.kvgate-stamp
  if [ ! -f "$stamp" ] || [ tests/agents/package.json -nt "$stamp" ]; then
    echo "install-deps: npm install in tests/agents (Claude Code, Codex)" >&2
    (cd tests/agents && npm install --no-audit --no-fund --no-package-lock --ignore-scripts \
      --loglevel=error >/dev/null)
    touch "$stamp"
  fi
fi
