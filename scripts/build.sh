#!/bin/bash
# Configures and builds whittle: scripts/build.sh [BUILD_DIR [CMAKE_OPTION...]]
# BUILD_DIR defaults to build/ in the repository; options go to cmake's configure step
# (e.g. -DWHITTLE_SANITIZE=ON). Build type RelWithDebInfo, warnings are errors (the
# project's default). WHITTLE_JOBS sets the parallelism (default 2: the machines have 2 cores).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$repo/build}
[ $# -gt 0 ] && shift

cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWHITTLE_WERROR=ON "$@" >/dev/null
cmake --build "$build" -j"${WHITTLE_JOBS:-2}"
