#!/bin/bash
# GPU tactics over the corpus (issue 25, docs/gpu.md "Tactics over the corpus"): per model and
# precision, the GPU layers that have tactics and those with more than one (inspect --tactics), the time of
# one build (the builder timing every tactic with CUDA events), how many different tactic sets
# N builds with a timing tolerance of 10 % give (no fault injected), and the spread of the
# outputs between builds: the largest max_abs of each build's outputs (its replay loaded)
# against the first build's. Needs a GPU and the CUDA module beside the binary.
# Usage: scripts/bench-gpu-tactics.sh [--builds N] [MODEL...]   (default: fixtures/corpus/*.onnx,
# 10 builds; WHITTLE=path of the binary, default build/whittle). Prints a Markdown table.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
W=${WHITTLE:-$repo/build/whittle}
builds=10
models=()
while [ $# -gt 0 ]; do
	case $1 in
	--builds) builds=$2; shift 2 ;;
	-h | --help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) models+=("$1"); shift ;;
	esac
done
[ ${#models[@]} -gt 0 ] || models=("$repo"/fixtures/corpus/*.onnx)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-gpu-tactics.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "| model | precision | GPU layers with tactics | with >1 tactic | one build (s) | tactic sets in $builds builds | largest max_abs between builds |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for m in "${models[@]}"; do
	n=$(basename "$m" .onnx)
	for p in fp32 fp16; do
		d=$tmp/$n-$p
		mkdir -p "$d"
		"$W" inspect "$m" --tactics --device cuda --precision "$p" >"$d/inspect.txt" 2>/dev/null || true
		gl=$(grep -cE ', cuda\):' "$d/inspect.txt" || true)
		multi=$(grep -E ', cuda\):' "$d/inspect.txt" | awk -F', (lt|cudnn)-' 'NF > 1' | wc -l || true)
		t0=$(date +%s.%N)
		"$W" build "$m" --device cuda --precision "$p" --until 1 --artifacts-dir "$d/one" --no-confirm >/dev/null 2>&1 || true
		t1=$(date +%s.%N)
		"$W" build "$m" --device cuda --precision "$p" --until "$builds" --timing-tolerance 0.1 --artifacts-dir "$d/b" --no-confirm \
			>/dev/null 2>&1 || true
		sets=$(for f in "$d"/b/*/build_*.json; do [ -f "$f" ] && /usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["layers"]
print(sorted((k, v["tactic"]) for k, v in r.items()))' "$f" | md5sum; done | sort -u | wc -l || true)
		spread=0
		first=
		for f in "$d"/b/*/build_*.json; do
			[ -f "$f" ] || continue
			o=$d/o-$(basename "$f" .json)-$(basename "$(dirname "$f")")
			"$W" run "$m" --device cuda --precision "$p" --load-tactics "$f" --save-outputs "$o" >/dev/null 2>&1 || continue
			if [ -z "$first" ]; then
				first=$o
				continue
			fi
			x=$("$W" compare "$first" "$o" --atol 0 --rtol 0 2>/dev/null | grep -oE 'max_abs [^ ]+' | awk '{print $NF}' | sort -g | tail -1 || true)
			spread=$(awk -v a="$spread" -v b="${x:-0}" 'BEGIN { print (b + 0 > a + 0) ? b : a }')
		done
		printf '| %s | %s | %s | %s | %.2f | %s | %s |\n' "$n" "$p" "$gl" "$multi" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b - a}')" "$sets" "$spread"
	done
done
