#!/bin/bash
# reduce of a large model, small (issue 14, acceptance 1 and 3, on a generated decoder with
# the 2 GiB limits lowered by the options so that every path runs in seconds):
# - an external check that loads every candidate with the onnx package (load_external_data,
#   checker) and ONNX Runtime and compares ONNX Runtime's outputs with {golden}
#   (tests/bigmodel-check.py): the decoder has its weights inline, --max-inline-size 64K makes
#   each candidate's weights external data, and no candidate's .onnx passes 64K;
#   --reference-memory 0 puts every reference value on disk (.npy, mapped), so {inputs} and
#   {golden} come from the mapped files and ONNX Runtime is the oracle for them;
# - with the built-in check at fp16: the same reduced model and the same repro values for
#   every budget (all in memory, none, some), with -j 2 too; the log says where they went;
# - --reference-memory refuses what is not a size.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC. Needs /usr/bin/python3 with onnx, numpy.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
py=/usr/bin/python3
. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

gen=(--layers 2 --hidden 64 --heads 4 --seq 8 --vocab 256 --seed 3)
$py "$src/scripts/gen-decoder.py" "$tmp/d.onnx" "${gen[@]}"
limit=65536

# ---- external check: onnx + ONNX Runtime on every candidate ----
cat > "$tmp/check.sh" <<EOF
#!/bin/sh
# a candidate's protobuf over the lowered limit is a finding too
size=\$(stat -c %s "\$1")
[ "\$size" -le $limit ] || echo "BAD \$1: \$size bytes of protobuf, over $limit" >> "$tmp/check.log"
exec $py "$src/tests/bigmodel-check.py" "\$1" "\$2" "\$3" --log "$tmp/check.log" --fail-if-node layer1_up
EOF
chmod +x "$tmp/check.sh"
: > "$tmp/check.log"
run "$whittle" reduce "$tmp/d.onnx" -o "$tmp/red/reduced.onnx" --artifacts-dir "$tmp/red" -j 2 \
	--max-inline-size 64K --reference-memory 0 --check "$tmp/check.sh" {model} {inputs} {golden}
n_ok=$(grep -c '^OK ' "$tmp/check.log" || true)
if [ "$rc" != 0 ]; then
	bad "reduce with the onnx + ONNX Runtime check: exit $rc"
elif grep -q '^BAD ' "$tmp/check.log"; then
	grep '^BAD ' "$tmp/check.log" | head -3 > "$tmp/err"
	bad "a candidate did not load, run or agree with its golden values"
elif [ "$n_ok" -lt 5 ]; then
	bad "only $n_ok candidates were checked"
else
	ok "reduce, external check: $n_ok candidates loaded in onnx and ONNX Runtime and matched {golden}"
fi
grep -q 'reference values: 0.0 MiB in memory, .* in [0-9]* .npy files' "$tmp/err" &&
	ok "--reference-memory 0: every reference value written as .npy" || bad "no spill line in the log"
[ "$(stat -c %s "$tmp/red/reduced.onnx")" -le $limit ] &&
	$py "$src/tests/bigmodel-check.py" "$tmp/red/reduced.onnx" "$tmp/red/repro/inputs" "$tmp/red/repro/golden" 2>"$tmp/err" &&
	ok "the reduced model loads in onnx and ONNX Runtime and matches the repro's golden values" ||
	bad "the reduced model or its repro bundle"
find "$tmp/red" -name '*.npy' | grep -q . && bad "reference .npy files left in the artifacts folder" ||
	ok "the work folder's .npy files are removed at the end"

# ---- built-in check: the same answer whatever the budget ----
first=""
for b in "" 0 8K; do
	for j in 1 2; do
		[ -z "$b" ] && [ "$j" = 2 ] && continue
		o=$tmp/b${b:-default}-$j
		run "$whittle" reduce "$tmp/d.onnx" -o "$o/r.onnx" --artifacts-dir "$o" --precision fp16 --atol 1e-5 --rtol 1e-5 \
			-j "$j" ${b:+--reference-memory "$b"}
		[ "$rc" = 0 ] || { bad "built-in check, --reference-memory ${b:-default} -j $j: exit $rc"; continue; }
		sum=$(cd "$o" && cat r.onnx repro/inputs/* repro/golden/* | md5sum)
		if [ -z "$first" ]; then
			first=$sum
			grep -q '.npy files' "$tmp/err" && bad "default budget: reference values written to disk"
		elif [ "$sum" = "$first" ]; then
			grep -q '.npy files' "$tmp/err" && ok "--reference-memory $b -j $j: the same model and repro values" ||
				bad "--reference-memory $b: nothing written to disk"
		else
			bad "--reference-memory $b -j $j: another model or other repro values"
		fi
	done
done

run "$whittle" reduce "$tmp/d.onnx" -o "$tmp/x.onnx" --reference-memory lots
[ "$rc" = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q -- "--reference-memory 'lots': not a size" "$tmp/err" &&
	ok "--reference-memory lots: one usage line, exit 2" || bad "--reference-memory lots: exit $rc"

echo "e2e-reduce-spill: $pass passed, $fail failed"
[ "$fail" = 0 ]
