#!/bin/bash
# Large-model benchmark: a generated Llama-style decoder of about 3.1 GB (float32, 13
# layers, hidden 2048, vocabulary 32000, every weight in one external-data file;
# scripts/gen-decoder.py), kept under $WHITTLE_BIGMODEL_DIR (default /tmp/whittle-bigmodel;
# never in the repository). Measures whittle's inspect, extract of the whole model and of
# one layer, sanitize, a reduce --precision fp16 with the built-in check (reference values
# in memory, then all on disk with --reference-memory 0), a reduce whose external check loads
# every candidate with the onnx package and ONNX Runtime (time, peak resident memory, new
# bytes written) and a run against
# ONNX Runtime (median time, peak resident memory). Prints a markdown section
# ("## Large models") on stdout. The run is timed in --rounds alternating rounds (ONNX Runtime
# first in odd rounds, whittle first in even ones, so that a slow spell of a shared machine
# hits both): a time is the median over the rounds, the time ratio the median of the rounds'
# ratios, a peak the largest over the rounds.
#   scripts/bench-bigmodel.sh [--threads N] [--iterations N] [--rounds N] [--keep]
# It writes 3.1 GB (the model, generated once and reused) plus kilobytes per command;
# --keep leaves the model in place for the next run (default: removed at the end).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
threads=2
iters=3
rounds=3
keep=0
while [ $# -gt 0 ]; do
	case $1 in
	--threads) threads=$2; shift ;;
	--iterations) iters=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--keep) keep=1 ;;
	*) echo "usage: scripts/bench-bigmodel.sh [--threads N] [--iterations N] [--rounds N] [--keep]" >&2; exit 2 ;;
	esac
	shift
done
wh=${WHITTLE:-$root/build/whittle}
[ -x "$wh" ] || { echo "bench-bigmodel: build whittle first (scripts/build.sh)" >&2; exit 2; }
dir=${WHITTLE_BIGMODEL_DIR:-/tmp/whittle-bigmodel}
mkdir -p "$dir"
model=$dir/decoder.onnx
gen_args=(--layers 13 --hidden 2048 --heads 16 --seq 32 --vocab 32000 --external-data decoder.data --seed 1)
if [ ! -f "$model" ] || [ "$(cat "$dir/gen-args" 2>/dev/null)" != "${gen_args[*]}" ]; then
	rm -f "$model" "$dir/decoder.data"
	/usr/bin/python3 "$root/scripts/gen-decoder.py" "$model" "${gen_args[@]}"
	echo "${gen_args[*]}" > "$dir/gen-args"
fi
work=$(mktemp -d "$dir/work.XXXXXX")
cleanup() {
	rm -rf "$work"
	[ "$keep" = 1 ] || rm -f "$model" "$dir/decoder.data" "$dir/gen-args"
}
trap cleanup EXIT
data_ino=$(stat -c %i "$dir/decoder.data")
size_mb=$(( ($(stat -c %s "$dir/decoder.data") + $(stat -c %s "$model")) / 1048576 ))

# timed CMD...: "<seconds> <peak resident MB>" of the command (GNU time)
timed() {
	/usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$work/out" 2> "$work/err" || { cat "$work/err" >&2; exit 1; }
	awk '{ printf "%.2f %.0f", $1, $2 / 1024 }' "$work/time"
}
# bytes under a folder that are not the original's weights file (hard-linked)
new_bytes() {
	local total=0 f
	while IFS= read -r f; do
		[ "$(stat -c %i "$f")" = "$data_ino" ] && continue
		total=$((total + $(stat -c %s "$f")))
	done < <(find "$1" -type f)
	echo "$total"
}
row() { # name seconds MB folder
	local b=""
	[ -n "${4:-}" ] && b=$(new_bytes "$4")
	echo "| $1 | $2 | $3 | ${b:--} |"
}

echo "## Large models"
echo
echo "Measured by \`scripts/bench-bigmodel.sh\` on $(date -u +%Y-%m-%d): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'),"
echo "$(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo) of memory. The model: scripts/gen-decoder.py ${gen_args[*]}"
echo "($size_mb MB: $(stat -c %s "$model") bytes of protobuf, the rest one external-data file), in the page cache"
echo "(generated just before). Peak memory is the peak resident set of the process (file pages"
echo "it maps count once touched). New bytes: what the command wrote, not counting the hard"
echo "link to the original's weights file."
echo
echo "| command | seconds | peak MB | new bytes |"
echo "| --- | ---: | ---: | ---: |"
set -- $(timed "$wh" inspect "$model"); row "inspect" "$1" "$2"
mkdir -p "$work/whole" "$work/layer" "$work/sane"
set -- $(timed "$wh" extract "$model" -o "$work/whole/decoder.onnx" --inputs input_ids --outputs logits)
row "extract (whole model)" "$1" "$2" "$work/whole"
set -- $(timed "$wh" extract "$model" -o "$work/layer/layer6.onnx" --inputs layer5_residual2_out --outputs layer6_residual2_out)
row "extract (layer 6)" "$1" "$2" "$work/layer"
set -- $(timed "$wh" sanitize "$model" -o "$work/sane/decoder.onnx"); row "sanitize" "$1" "$2" "$work/sane"
mkdir -p "$work/red"
set -- $(timed "$wh" reduce "$model" -o "$work/red/reduced.onnx" --precision fp16 --atol 1e-4 --rtol 1e-4 --threads "$threads")
red_line=$(grep -o "reduce: .* per candidate" "$work/err" || true)
row "reduce --precision fp16 (built-in check)" "$1" "$2" "$work/red"
# the same with every reference value on disk (one .npy per tensor, mapped when needed)
mkdir -p "$work/red0"
set -- $(timed "$wh" reduce "$model" -o "$work/red0/reduced.onnx" --precision fp16 --atol 1e-4 --rtol 1e-4 --threads "$threads" \
	--reference-memory 0)
red0_line=$(grep -o "reduce: .* per candidate" "$work/err" || true)
spill_line=$(grep -o "reference values: .*" "$work/err" || true)
cmp -s "$work/red/reduced.onnx" "$work/red0/reduced.onnx" || { echo "bench-bigmodel: --reference-memory 0 reduced to another model" >&2; exit 1; }
row "reduce --precision fp16 --reference-memory 0" "$1" "$2" "$work/red0"
# an external check that loads each candidate with the onnx package (checker on the path)
# and ONNX Runtime, and fails while the candidate holds layer 6's MLP up projection; every
# candidate must load in both, and no file whittle writes may reach 2 GiB
cat > "$work/check.py" <<EOF
import os, subprocess, sys, tempfile
import onnx
model, inputs = sys.argv[1], sys.argv[2]
why = None
try:
    onnx.checker.check_model(model)
    for f in os.listdir(os.path.dirname(model)):
        st = os.stat(os.path.join(os.path.dirname(model), f))
        if st.st_ino != $data_ino and st.st_size >= 2 << 30:
            why = "%s: %d bytes" % (f, st.st_size)
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run(["node", "$root/scripts/ort-run.js", model, inputs, out], capture_output=True, text=True)
        if r.returncode:
            why = "ONNX Runtime: " + (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
except Exception as e:
    why = "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0])
with open("$work/check.log", "a") as f:
    f.write(("BAD %s: %s\n" % (model, why)) if why else ("OK %s\n" % model))
m = onnx.load(model, load_external_data=False)
sys.exit(1 if any(n.name == "layer6_up" for n in m.graph.node) else 0)
EOF
mkdir -p "$work/redx"
: > "$work/check.log"
set -- $(timed "$wh" reduce "$model" -o "$work/redx/reduced.onnx" --artifacts-dir "$work/redx" \
	--check /usr/bin/python3 "$work/check.py" {model} {inputs})
redx_line=$(grep -o "reduce: .* per candidate" "$work/err" || true)
if grep -q '^BAD ' "$work/check.log"; then grep '^BAD ' "$work/check.log" | head -3 >&2; echo "bench-bigmodel: a candidate did not load" >&2; exit 1; fi
n_loaded=$(grep -c '^OK ' "$work/check.log")
row "reduce, external check (onnx + ONNX Runtime load each candidate)" "$1" "$2" "$work/redx"
for f in "$work/whole/decoder.onnx" "$work/layer/layer6.onnx" "$work/sane/decoder.onnx"; do
	/usr/bin/python3 -c "import onnx, sys; onnx.checker.check_model(sys.argv[1])" "$f" ||
		{ echo "bench-bigmodel: onnx.checker refuses $f" >&2; exit 1; }
done

# run against ONNX Runtime: same input (token ids all 0), same threads
cat > "$work/ort.js" <<EOF
'use strict';
const ort = require('$root/scripts/node_modules/onnxruntime-node');
(async () => {
	const sess = await ort.InferenceSession.create(process.argv[2],
		{ executionMode: 'sequential', interOpNumThreads: 1, intraOpNumThreads: $threads });
	const feeds = { input_ids: new ort.Tensor('int64', new BigInt64Array(32), [1, 32]) };
	await sess.run(feeds);
	const t = [];
	for (let i = 0; i < $iters; i++) {
		const t0 = process.hrtime.bigint();
		await sess.run(feeds);
		t.push(Number(process.hrtime.bigint() - t0) / 1e6);
	}
	t.sort((a, b) => a - b);
	console.log('median_ms ' + t[(t.length - 1) >> 1].toFixed(1));
	console.log('peak_rss_mb ' + (process.resourceUsage().maxRSS / 1024).toFixed(1));
})().catch((e) => { console.error('ort: ' + e.message); process.exit(1); });
EOF
val() { grep "^$1 " "$2" | awk '{print $2}'; }
run_ort() { node "$work/ort.js" "$model" > "$work/ort.txt"; }
run_wh() { "$wh" run "$model" --threads "$threads" --iterations "$iters" --val-range 0,1 > "$work/wh.txt"; }
: > "$work/rounds"
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then run_ort; run_wh; else run_wh; run_ort; fi
	echo "$(val median_ms "$work/ort.txt") $(val median_ms "$work/wh.txt") $(val peak_rss_mb "$work/ort.txt") $(val peak_rss_mb "$work/wh.txt")" >> "$work/rounds"
done
median_col() { # column of the rounds file (or "ratio": whittle / ONNX Runtime time)
	awk -v c="$1" '{ print (c == "ratio" ? $2 / $1 : $c) }' "$work/rounds" | sort -g |
		awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
max_col() { awk -v c="$1" 'BEGIN { m = 0 } $c > m { m = $c } END { printf "%.1f", m }' "$work/rounds"; }
o=$(median_col 1); w=$(median_col 2); ratio=$(median_col ratio)
om=$(max_col 3); wm=$(max_col 4)
echo
echo "The reduce: ${red_line#reduce: }); its built-in check runs each candidate in fp16 and in FP32."
echo "With --reference-memory 0 (the same reduced model): ${red0_line#reduce: }); ${spill_line}."
echo "With the external check: ${redx_line#reduce: }); $n_loaded candidates, each loaded by"
echo "onnx.checker and run by ONNX Runtime with its external data; no file written reached 2 GiB. Its peak"
echo "memory is the largest of whittle's and its checks' (GNU time counts waited-for children)."
echo
echo "Run, $threads threads, median of $iters runs after a warm-up, in $rounds alternating rounds (time: the"
echo "median over the rounds; ratio: the median of the rounds' ratios; peak: the largest):"
echo
echo "| runtime | ms | peak MB |"
echo "| --- | ---: | ---: |"
echo "| ONNX Runtime $(node -e "console.log(require('$root/scripts/node_modules/onnxruntime-node/package.json').version)") | $o | $om |"
echo "| whittle run | $w | $wm |"
echo "| ratio | $(awk -v a="$ratio" 'BEGIN { printf "%.2f", a }') | $(awk -v a="$wm" -v b="$om" 'BEGIN { printf "%.2f", a / b }') |"
