#!/bin/bash
# whittle against ONNX Runtime on the quantized CNN of scripts/gen-quant-models.py (224x224;
# the float model, its fp16-stored copy, quantize_dynamic's layout, QDQ and QOperator), the method of
# scripts/bench-corpus.sh: one seeded input written once and fed to both runtimes; each round
# runs both, each a fresh process timing N runs after a warm-up and printing its median; the
# order alternates from round to round; a time is the median over the rounds, the ratio the
# median of the rounds' ratios. Prints a markdown table.
#   scripts/bench-quant.sh [--whittle PATH] [--threads N] [--rounds R] [--iterations N]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
wh=$root/build/whittle
threads=2
rounds=5
iterations=20
while [ $# -gt 0 ]; do
	case $1 in
	--whittle) wh=$2; shift ;;
	--threads) threads=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--iterations) iterations=$2; shift ;;
	*) echo "usage: scripts/bench-quant.sh [--whittle PATH] [--threads N] [--rounds R] [--iterations N]" >&2; exit 2 ;;
	esac
	shift
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-bench-quant.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$root/scripts/gen-quant-models.py" "$tmp/m"
median() { sort -g | awk '{v[NR] = $1} END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
val() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
echo "| model | ONNX Runtime ms | whittle ms | whittle / ONNX Runtime |"
echo "| --- | ---: | ---: | ---: |"
for m in f32 fp16 dynamic qdq qlinear; do
	model=$tmp/m/quant-cnn-$m.onnx
	mkdir -p "$tmp/$m/in" "$tmp/$m/out"
	node "$root/scripts/ort-run.js" "$model" "$tmp/$m/in" "$tmp/$m/out" --seed 7 > /dev/null
	: > "$tmp/r.txt"
	for r in $(seq 1 "$rounds"); do
		ort() { node "$root/scripts/ort-bench.js" "$model" --inputs "$tmp/$m/in" --threads "$threads" --iterations "$iterations" > "$tmp/o.txt"; }
		whr() { "$wh" run "$model" --load-inputs "$tmp/$m/in" --threads "$threads" --iterations "$iterations" > "$tmp/w.txt"; }
		if [ $((r % 2)) = 1 ]; then ort; whr; else whr; ort; fi
		echo "$(val median_ms "$tmp/o.txt") $(val median_ms "$tmp/w.txt")" >> "$tmp/r.txt"
	done
	o=$(awk '{print $1}' "$tmp/r.txt" | median)
	w=$(awk '{print $2}' "$tmp/r.txt" | median)
	ratio=$(awk '{printf "%.4f\n", $2 / $1}' "$tmp/r.txt" | median)
	printf '| quant-cnn-%s | %.2f | %.2f | %.2f |\n' "$m" "$o" "$w" "$ratio"
done
echo
echo "$rounds alternating rounds of $iterations runs each, --threads $threads; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)"
