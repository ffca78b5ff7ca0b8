#!/bin/bash
# Installs what is missing, builds whittle three ways and runs every test through ctest:
#   1. build/       RelWithDebInfo, -Werror: the full suite;
#   2. build-release/  the plain CMake Release build, warnings as errors (binary only);
#   3. build-asan/  the same suite with AddressSanitizer + UndefinedBehaviorSanitizer
#                   (-DWHITTLE_SANITIZE=ON), run with WHITTLE_TEST_QUICK=1.
# WHITTLE_TEST_QUICK=1 lets an expensive test run a representative subset (it says so in
# its output); the sanitizers are about memory and UB in whittle, which a subset exercises
# as well, and the two passes must fit in 15 minutes on 2 cores.
# Options: --no-asan skips the second pass (a quicker local run; CI runs both).
# WHITTLE_ONNX_TESTS points at the ONNX backend test data (default ../shared/onnx-tests).
# WHITTLE_BUILD_PREFIX moves the trees: $WHITTLE_BUILD_PREFIX and $WHITTLE_BUILD_PREFIX-asan.
# Exits non-zero when a build or any test fails; the last line sums up both passes
# ("total: N passed, N failed", a failed build counting as one failure).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
asan=1
for arg in "$@"; do
	case $arg in
	--no-asan) asan=0 ;;
	-h | --help)
		sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "test.sh: unknown option $arg (see scripts/test.sh --help)" >&2
		exit 2
		;;
	esac
done

export WHITTLE_ONNX_TESTS=${WHITTLE_ONNX_TESTS:-$repo/../shared/onnx-tests}
if [ ! -d "$WHITTLE_ONNX_TESTS" ]; then
	echo "test.sh: ONNX test data not found at $WHITTLE_ONNX_TESTS (set WHITTLE_ONNX_TESTS)" >&2
	exit 1
fi

"$repo/scripts/setup.sh"

total_pass=0
total_fail=0
status=0

# The plain CMake Release build (-O3, where gcc finds more maybe-uninitialized paths than at
# -O2) must compile without a warning too: built with -Werror, the binary only, no tests.
release_build() {
	local dir=$1
	echo "== release-build: cmake -DCMAKE_BUILD_TYPE=Release in $dir"
	mkdir -p "$dir"
	if cmake -S "$repo" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DWHITTLE_WERROR=ON >"$dir/whittle-build.log" 2>&1 &&
		cmake --build "$dir" -j"${WHITTLE_JOBS:-2}" --target whittle >>"$dir/whittle-build.log" 2>&1; then
		echo "== release-build: 1 passed"
		total_pass=$((total_pass + 1))
	else
		tail -40 "$dir/whittle-build.log"
		echo "== release-build: failed (full log: $dir/whittle-build.log)"
		total_fail=$((total_fail + 1))
		return 1
	fi
}

# run_pass NAME BUILD_DIR [CMAKE_OPTION...]: build, run ctest, add to the totals.
run_pass() {
	local name=$1 dir=$2
	shift 2
	echo "== $name: building in $dir"
	mkdir -p "$dir"
	if ! "$repo/scripts/build.sh" "$dir" "$@" >"$dir/whittle-build.log" 2>&1; then
		tail -40 "$dir/whittle-build.log"
		echo "== $name: build failed (full log: $dir/whittle-build.log)"
		total_fail=$((total_fail + 1))
		return 1
	fi
	echo "== $name: ctest"
	local out rc=0
	out=$(mktemp "${TMPDIR:-/tmp}/whittle-ctest.XXXXXX")
	(cd "$dir" && ctest --output-on-failure -j2) 2>&1 | tee "$out" || rc=$?
	local line
	line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$out" | tail -1 || true)
	rm -f "$out"
	if [ -z "$line" ]; then
		echo "== $name: ctest printed no summary"
		total_fail=$((total_fail + 1))
		return 1
	fi
	local failed all
	failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
	all=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
	total_pass=$((total_pass + all - failed))
	total_fail=$((total_fail + failed))
	echo "== $name: $line"
	[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$all" -gt 0 ]
}

prefix=${WHITTLE_BUILD_PREFIX:-$repo/build}
start=$SECONDS
if ! run_pass release "$prefix"; then
	status=1
	# a build that does not compile will not compile with sanitizers either
	[ -f "$prefix/whittle" ] || asan=0
fi
release_build "$prefix-release" || status=1
if [ "$asan" -eq 1 ]; then
	if ! WHITTLE_TEST_QUICK=1 run_pass asan "$prefix-asan" -DWHITTLE_SANITIZE=ON; then
		status=1
	fi
fi
echo "== test.sh: $((SECONDS - start)) s"
echo "total: $total_pass passed, $total_fail failed"
exit $status
