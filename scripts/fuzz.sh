#!/bin/bash
# Builds the libFuzzer targets (tests/fuzz-*.c) with clang in build-fuzz/, seeds their
# corpora from the ONNX backend test data and fixtures/tensors, runs each target for
# SECONDS (default 600) and reports what it found.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      TARGET: fuzz-model, fuzz-tensor, fuzz-run,
#                                              fuzz-replay, fuzz-names, fuzz-tensor-names (default: all)
#
# Environment: WHITTLE_ONNX_TESTS (default ../shared/onnx-tests), FUZZ_BUILD (default
# build-fuzz), FUZZ_JOBS (targets run at once, default 1: the machine is shared),
# FUZZ_ARGS (extra libFuzzer flags).
# Exit status: 0 when no target found anything, 1 when one did, 2 on a build failure.
# Needs clang and its libFuzzer runtime (Debian: libclang-rt-<version>-dev).
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_EACH=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(fuzz-model fuzz-tensor fuzz-run fuzz-replay fuzz-names fuzz-tensor-names)
BUILD=${FUZZ_BUILD:-$ROOT/build-fuzz}
ONNX_TESTS=${WHITTLE_ONNX_TESTS:-$ROOT/../shared/onnx-tests}
JOBS=${FUZZ_JOBS:-1}

die() { echo "fuzz.sh: $*" >&2; exit 2; }

case $SECONDS_EACH in ''|*[!0-9]*) die "SECONDS must be a whole number (got '$SECONDS_EACH')";; esac
command -v clang >/dev/null || die "clang not found (apt-get install clang)"
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' > "${TMPDIR:-/tmp}/wh-fuzz-probe.c"
clang -fsanitize=fuzzer "${TMPDIR:-/tmp}/wh-fuzz-probe.c" -o "${TMPDIR:-/tmp}/wh-fuzz-probe" 2>/dev/null ||
	die "clang cannot link libFuzzer (apt-get install libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev)"
rm -f "${TMPDIR:-/tmp}/wh-fuzz-probe" "${TMPDIR:-/tmp}/wh-fuzz-probe.c"

# The whole library gets coverage instrumentation (fuzzer-no-link) and ASan+UBSan, so the
# fuzzer sees the parser's branches, not only the target's. Warnings are not errors here:
# clang warns about things gcc does not, and this build is for finding crashes.
echo "== building in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DWHITTLE_FUZZ=ON -DWHITTLE_SANITIZE=ON -DWHITTLE_WERROR=OFF \
	-DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" >"$BUILD.configure.log" 2>&1 ||
	{ tail -20 "$BUILD.configure.log"; die "cmake configure failed (log: $BUILD.configure.log)"; }
cmake --build "$BUILD" -j"${FUZZ_BUILD_JOBS:-2}" --target "${TARGETS[@]}" >"$BUILD/build.log" 2>&1 ||
	{ grep -E 'error|Error' "$BUILD/build.log" | head -20; die "build failed (log: $BUILD/build.log)"; }

# Seeds are copied (never written into the shared test data); libFuzzer adds what it finds
# to the first corpus folder.
seed() { # seed NAME FILE...
	local dir=$BUILD/seeds/$1
	shift
	mkdir -p "$dir"
	for f in "$@"; do
		[ -f "$f" ] || continue
		cp "$f" "$dir/$(echo "$f" | md5sum | cut -c1-16)-$(basename "$f")"
	done
}
if [ ! -d "$BUILD/seeds" ]; then
	echo "== seeding corpora"
	if [ -d "$ONNX_TESTS" ]; then
		mapfile -t models < <(find "$ONNX_TESTS" -name model.onnx -size -64k | sort)
		seed fuzz-model "${models[@]}"
		seed fuzz-run "${models[@]}"
		# every third tensor file keeps the seed corpus small while covering every type
		mapfile -t tensors < <(find "$ONNX_TESTS" -name '*.pb' -size -16k | sort | awk 'NR % 3 == 1')
		seed fuzz-tensor "${tensors[@]}"
	else
		echo "fuzz.sh: $ONNX_TESTS not found: seeding from fixtures only" >&2
	fi
	seed fuzz-model $(find "$ROOT/fixtures" -name '*.onnx' -size -64k 2>/dev/null)
	seed fuzz-tensor "$ROOT"/fixtures/tensors/*.pb "$ROOT"/fixtures/tensors/*.npy
	mkdir -p "$BUILD/seeds/fuzz-model" "$BUILD/seeds/fuzz-tensor" "$BUILD/seeds/fuzz-run"
fi
# fuzz-replay: one file of each kind it reads (tests/fuzz-replay.c's model is one Conv
# x[1,1,3,3] * w[1,1,1,1], whose timing-cache key is below)
if [ ! -d "$BUILD/seeds/fuzz-replay" ]; then
	mkdir -p "$BUILD/seeds/fuzz-replay"
	cat >"$BUILD/seeds/fuzz-replay/timing-cache.json" <<'EOF'
{"Conv|float32:1x1x3x3;float32:1x1x1x1": {"conv-gemm-scalar": 0.0097, "conv-direct-scalar": 0.004, "conv-im2col-gemm-scalar": 0.02}}
EOF
	cat >"$BUILD/seeds/fuzz-replay/tactics.json" <<'EOF'
{"format": "whittle-tactics", "version": 1, "model": "49098e19f365facde62a9872b75123e9", "precision": "fp32", "seed": 3,
 "layers": {"c": {"op": "Conv", "tactic": "conv-direct-scalar", "id": 1000, "ms": 0.004}}}
EOF
	cat >"$BUILD/seeds/fuzz-replay/polygraphy.json" <<'EOF'
{"replay": {"c": {"implementation": "CaskConvolution", "tactic": 4611686018427387905, "inputs": [], "outputs": []}}}
EOF
	cat >"$BUILD/seeds/fuzz-replay/reduce-replay.jsonl" <<'EOF'
{"original":"3beee95a85d77c0da2e74fc0d7efc02a","whittle":"0.1","nodes":2}
{"hash":"0123456789abcdef0123456789abcdef","verdict":"fail","nodes":2,"seconds":0.01,"exit":1}
{"hash":"fedcba9876543210fedcba9876543210","verdict":"skip","nodes":1,"seconds":0.01,"exit":125,"timeout":true}
EOF
fi
# fuzz-names: names of the kinds scripts/gen-hostile-names.py writes
if [ ! -d "$BUILD/seeds/fuzz-names" ]; then
	mkdir -p "$BUILD/seeds/fuzz-names"
	printf '/model/layers.0/self_attn/MatMul_1' >"$BUILD/seeds/fuzz-names/plain"
	printf 't\033[2J\033]52;c;UFdO\007`x``|<script>' >"$BUILD/seeds/fuzz-names/escapes"
	printf 'sq\302\23331m\177\377\376\300\257 caf\303\251 \360\237\230\200\n# h' >"$BUILD/seeds/fuzz-names/bytes"
fi

# fuzz-tensor-names: tensor names as exporters write them, two to an input (split at a NUL),
# and one whose escaped form is past a file name's length
if [ ! -d "$BUILD/seeds/fuzz-tensor-names" ]; then
	mkdir -p "$BUILD/seeds/fuzz-tensor-names"
	printf 'conv1/weight:0' >"$BUILD/seeds/fuzz-tensor-names/slash"
	printf 'onnx::Flatten_0\0onnx__Flatten_0' >"$BUILD/seeds/fuzz-tensor-names/pair"
	printf '.hidden\0..' >"$BUILD/seeds/fuzz-tensor-names/dots"
	printf 'input_0\0a~b%%41' >"$BUILD/seeds/fuzz-tensor-names/positional"
	printf '/%.0s' $(seq 1 100) >"$BUILD/seeds/fuzz-tensor-names/long"
fi

# Tokens of the .npy header help the fuzzer past the dict parser.
cat >"$BUILD/npy.dict" <<'EOF'
"\x93NUMPY\x01\x00"
"\x93NUMPY\x02\x00"
"\x93NUMPY\x03\x00"
"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
"'descr'"
"'fortran_order'"
"'shape'"
"True"
"False"
"'<f2'"
"'>f8'"
"'|b1'"
"'<c16'"
"'|V2'"
"(1,)"
"()"
"L,"
EOF

run_one() { # run_one TARGET
	local t=$1 extra=()
	# artifacts are per run: the report lists what this run found
	rm -rf "$BUILD/artifacts/$t"
	mkdir -p "$BUILD/corpus/$t" "$BUILD/artifacts/$t"
	[ "$t" = fuzz-tensor ] && extra=(-dict="$BUILD/npy.dict")
	# a tiny model may ask for a huge tensor (Tile, Expand, ConstantOfShape): whittle must
	# answer "out of memory" in one line, so allocations may fail instead of aborting, and
	# only a process that really grows past the RSS limit is a finding
	local asan_opts=${ASAN_OPTIONS:-}
	if [ "$t" = fuzz-run ]; then
		extra=(-malloc_limit_mb=4096 -rss_limit_mb=4096)
		asan_opts=${asan_opts:+$asan_opts:}allocator_may_return_null=1
	fi
	# -fork=1 -ignore_*: one finding does not end the run; every crashing input is kept.
	# -malloc_limit_mb: a small input that asks for a gigabyte is a finding, not a slow run.
	ASAN_OPTIONS=$asan_opts "$BUILD/tests/$t" "$BUILD/corpus/$t" "$BUILD/seeds/$t" \
		-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
		-max_total_time="$SECONDS_EACH" -max_len=65536 -timeout=20 -rss_limit_mb=2048 \
		-malloc_limit_mb=1024 -artifact_prefix="$BUILD/artifacts/$t/" \
		"${extra[@]}" ${FUZZ_ARGS:-} >"$BUILD/$t.log" 2>&1
	echo $? >"$BUILD/$t.rc"
}

echo "== fuzzing ${TARGETS[*]} for ${SECONDS_EACH}s each ($JOBS at a time)"
running=0
for t in "${TARGETS[@]}"; do
	[ -x "$BUILD/tests/$t" ] || die "$BUILD/tests/$t was not built"
	rm -f "$BUILD/$t.rc"
	run_one "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$JOBS" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait

echo "== report"
found=0
for t in "${TARGETS[@]}"; do
	rc=$(cat "$BUILD/$t.rc" 2>/dev/null || echo '?')
	# fork mode's status line: "#N: cov: C ft: F corp: K exec/s E oom/timeout/crash: a/b/c time: ..."
	last=$(grep -E '^#[0-9]+: cov:' "$BUILD/$t.log" | tail -1)
	runs=$(echo "$last" | sed -nE 's/^#([0-9]+):.*/\1/p')
	cov=$(echo "$last" | sed -nE 's/.* cov: ([0-9]+).*/\1/p')
	otc=$(echo "$last" | sed -nE 's|.*oom/timeout/crash: ([0-9/]+).*|\1|p')
	corpus=$(ls "$BUILD/corpus/$t" | wc -l)
	arts=$(ls "$BUILD/artifacts/$t" 2>/dev/null | wc -l)
	echo "$t: exit $rc, ${runs:-?} runs, cov ${cov:-?}, oom/timeout/crash ${otc:-?}, corpus $corpus new files, $arts artifacts (log: $BUILD/$t.log)"
	if [ "$rc" != 0 ] || [ "$arts" -gt 0 ]; then
		found=1
		# group the saved inputs by what they trigger, so one bug found 50 times reads as one
		for a in "$BUILD/artifacts/$t"/*; do
			[ -f "$a" ] || continue
			why=$("$BUILD/tests/$t" -runs=1 "$a" 2>&1 | grep -m1 -E "^$t: |runtime error|^SUMMARY: (Address|Undefined|Leak)|^==[0-9]+== ERROR: libFuzzer: (out-of-memory|timeout|malloc)" |
				sed -E 's/^==[0-9]+== //; s/0x[0-9a-f]+/ADDR/g; s/[0-9]+ bytes/N bytes/g; s/[0-9]+/N/g')
			printf '%s\t%s\n' "${why:-no longer reproduces}" "$a"
		done | sort | awk -F'\t' '$1 != prev { if (n) printf "    (%d inputs)\n", n; print "    " $1; print "      e.g. " $2; prev = $1; n = 0 } { n++ } END { if (n) printf "    (%d inputs)\n", n }'
		echo "    reproduce: $BUILD/tests/$t <input>"
	fi
done
exit $found
