#!/bin/bash
# Data files and statistics (issue 22 findings 4, 7-10, 13), each case failing on the main of
# before the fix:
#  4  a tensor of Inf against a finite reference is not "identical" (cosine nan, SQNR -inf);
#     --json has every key for every tensor, null where a number is not finite, no strings;
#  7  --fill-missing names each generated input once (attention_mask and mask), the rest counted;
#  8  input_0.pb (no stored name, position 0 is x) and x.npy are two files for one input;
#  9  unnamed positional files save with --save-inputs; inputs literally named input_<k>;
#  10 tensor names too long for a file name: --mark-all --save-outputs, reduce's spilled
#     reference values (--reference-memory 0) and repro bundle; a folder too long for them is
#     refused before the search;
#  13 lenient parsing refused with one line: duplicate --layer-precisions keys, external-data
#     offsets " 0", "" and twice, .npy trailing bytes, .pb raw_data + float_data, --val-range
#     beyond float32; a huge input named as such; run stopped by SIGTERM.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC. Needs /usr/bin/python3 with onnx, numpy.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
py=/usr/bin/python3

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

"$py" "$WHITTLE_SRC/tests/gen-data-fixtures.py" "$tmp/fx"
cd "$tmp/fx"

# one_line LABEL RC PATTERN: the last command exited RC with one stderr line matching PATTERN
one_line() {
	local label=$1 want=$2 pattern=$3
	if [ "$rc" -ne "$want" ]; then
		bad "$label: exit $rc, $want expected"
	elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qE -- "$pattern" "$tmp/err"; then
		bad "$label: stderr is not one line matching '$pattern'"
	else
		ok "$label: $(cut -c1-160 "$tmp/err")"
	fi
}

# ---- 4 ----
run "$whittle" run ovf.onnx --val-range 1,2 --precision fp16 --compare fp32
if [ "$rc" -eq 1 ] && grep -q '^FAIL y: .*cosine nan sqnr -inf dB.*6 mismatched' "$tmp/out" && ! grep -q 'cosine 1\.0' "$tmp/out"; then
	ok "all-Inf output against FP32: cosine nan, sqnr -inf, 6 mismatched"
else
	bad "all-Inf output: exit $rc: $(grep '^FAIL' "$tmp/out" | cut -c1-200)"
fi
run "$whittle" run ovf.onnx --val-range 1,2 --precision fp16 --compare fp32 --mark-all --json
cp "$tmp/out" "$tmp/ovf.json"
if "$py" - "$tmp/ovf.json" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
keys = ["tensor", "layer", "op", "pass", "max_abs", "mean_abs", "median_abs", "max_rel", "mean_rel", "median_rel", "cosine",
        "sqnr_db", "share_rel_10", "share_rel_1", "share_rel_01", "nan", "inf", "nan_reference", "inf_reference",
        "nonfinite_mismatch", "error_received", "error_added", "nonfinite_added"]
text = ("tensor", "layer", "op")
for t in d["tensors"]:
    for k in keys:
        assert k in t, "missing %s" % k
        v = t[k]
        if k in text:
            assert isinstance(v, str), k
        elif k == "pass":
            assert isinstance(v, bool)
        else:
            assert v is None or isinstance(v, (int, float)) and not isinstance(v, bool), "%s is %r" % (k, v)
y = d["tensors"][-1]
assert y["max_abs"] is None and y["cosine"] is None and y["sqnr_db"] is None and y["nonfinite_mismatch"] == 6, y
w = d["diagnosis"]["where_it_starts"]
for k in ("error_received", "error_added", "output_error", "output_error_kept_fp32"):
    assert w[k] is None or isinstance(w[k], (int, float)), "%s is %r" % (k, w[k])
PY
	ok "--json: every key for every tensor, null where not finite, no strings in numeric fields"
else
	bad "--json of an all-Inf output: $(head -c 600 "$tmp/ovf.json")"
fi
run "$whittle" run ovf.onnx --val-range 1,2 --precision fp16 --save-outputs "$tmp/o16"
run "$whittle" run ovf.onnx --val-range 1,2 --save-outputs "$tmp/o32"
run "$whittle" compare "$tmp/o16" "$tmp/o32"
if [ "$rc" -eq 1 ] && grep -q '^FAIL y: .*cosine nan sqnr -inf dB' "$tmp/out"; then
	ok "compare: an all-Inf folder against a finite one is not identical"
else
	bad "compare of all-Inf: exit $rc: $(head -1 "$tmp/out" | cut -c1-200)"
fi

# ---- 7 ----
run "$whittle" run many.onnx --load-inputs many-x --fill-missing
named=$(grep -o "'[^']*'" "$tmp/err" | sort | uniq -d | wc -l)
listed=$(grep -o "'[^']*'" "$tmp/err" | wc -l)
more=$(sed -n 's/.* \([0-9]*\) more (of 62).*/\1/p' "$tmp/err")
if [ "$rc" -eq 0 ] && grep -q "'attention_mask'" "$tmp/err" && grep -q "'mask'" "$tmp/err" && [ "$named" -eq 0 ] &&
	[ -n "$more" ] && [ $((listed + more)) -eq 62 ]; then
	ok "--fill-missing: attention_mask and mask both named, each once; $listed named and $more counted of 62"
else
	bad "--fill-missing warning: exit $rc, $listed named, '$more' more: $(cut -c1-200 "$tmp/err")"
fi

# ---- 8 ----
run "$whittle" run one.onnx --load-inputs dup8
one_line "input_0.pb (position 0 is x) and x.npy" 3 "two files hold input 'x'"

# ---- 9 ----
run "$whittle" run one.onnx --load-inputs pos9 --save-inputs "$tmp/s9"
if [ "$rc" -eq 0 ] && [ -f "$tmp/s9/x.pb" ] && "$py" -c "
import onnx, sys; t = onnx.load_tensor('$tmp/s9/x.pb'); sys.exit(t.name != 'x')"; then
	ok "--load-inputs of an unnamed input_0.pb with --save-inputs: saved as x.pb holding its name"
else
	bad "unnamed positional file with --save-inputs: exit $rc"
fi
# inputs named input_1, input_0 (that order): each file goes to the input of its name
run "$whittle" run lit.onnx --load-inputs lit9 --save-inputs "$tmp/s9l" --save-outputs "$tmp/o9l"
if [ "$rc" -eq 0 ] && "$py" - "$tmp" <<'PY'; then
import sys, numpy as np, onnx
from onnx import numpy_helper
t = sys.argv[1]
i0 = numpy_helper.to_array(onnx.load_tensor(t + "/s9l/input_0.pb"))
y = numpy_helper.to_array(onnx.load_tensor(t + "/o9l/y.pb"))
x = np.arange(6, dtype=np.float32).reshape(2, 3)
assert (i0 == x).all() and (y == x).all()   # y = input_1 - input_0 = 2x - x
PY
	ok "inputs literally named input_1, input_0: input_0.pb is input_0, input_1.pb is input_1"
else
	bad "inputs named input_<k>: exit $rc"
fi
run "$whittle" run ab.onnx --load-inputs lit9 --save-inputs "$tmp/s9ab"
if [ "$rc" -eq 0 ] && [ -f "$tmp/s9ab/a.pb" ] && [ -f "$tmp/s9ab/b.pb" ]; then
	ok "inputs a, b: input_0.pb and input_1.pb by position, saved as a.pb and b.pb"
else
	bad "positional files for a, b: exit $rc"
fi
run "$whittle" run one.onnx --load-inputs far9
one_line "input_5.pb for a model of one input" 3 "no input at position 5"

# ---- 10 ----
long=$(sed -n 1p long-names.txt)
slashes=$(sed -n 2p long-names.txt)
run "$whittle" run long.onnx --mark-all --save-outputs "$tmp/so"
n=$(ls "$tmp/so" 2>/dev/null | wc -l || true)
longest=$(ls "$tmp/so" 2>/dev/null | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' || true)
if [ "$rc" -eq 0 ] && [ "$n" -eq 3 ] && [ "$longest" -le 255 ]; then
	ok "--mark-all --save-outputs with names of 300 bytes and 90 '/': 3 files, the longest name $longest bytes"
else
	bad "--mark-all --save-outputs of long names: exit $rc, $n files, longest $longest"
fi
# read back: the exact names (stored in the .pb), compared against themselves
run "$whittle" compare "$tmp/so" "$tmp/so"
if [ "$rc" -eq 0 ] && grep -qF "PASS $long:" "$tmp/out" && grep -qF "PASS $slashes:" "$tmp/out"; then
	ok "the saved folder reads back with the exact long names"
else
	bad "long names read back: exit $rc: $(cut -c1-120 "$tmp/out")"
fi
# a .npy stores no name: under the hashed file name of a 300-byte input it is matched to it
run "$whittle" run longin.onnx --save-inputs "$tmp/li"
"$py" - "$tmp/li" <<'PY'
import glob, os, sys, numpy as np, onnx
from onnx import numpy_helper
(pb,) = glob.glob(sys.argv[1] + "/*.pb")
np.save(pb[:-3] + ".npy", numpy_helper.to_array(onnx.load_tensor(pb)))
os.remove(pb)
PY
run "$whittle" run longin.onnx --load-inputs "$tmp/li"
if [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ] && ls "$tmp/li" | grep -q '^I\{1,\}~[0-9a-f]\{32\}\.npy$'; then
	ok "a .npy under the hashed file name of a 300-byte input name is read as that input"
else
	bad "hashed .npy: exit $rc, files $(ls "$tmp/li" | cut -c1-40)"
fi
# reduce with every reference value on disk (.npy named after the tensor) and a repro bundle
run "$whittle" reduce long.onnx -o "$tmp/r10.onnx" --precision fp16 --atol 0 --rtol 0 --reference-memory 0 --artifacts-dir "$tmp/art10"
ng=$(ls "$tmp/art10/repro/golden" 2>/dev/null | wc -l || true)
if [ "$rc" -eq 0 ] && [ -s "$tmp/r10.onnx" ] && [ "$ng" -ge 1 ] && ! grep -q "external --check" "$tmp/err"; then
	ok "reduce --reference-memory 0 --artifacts-dir with long names: reduced, repro bundle with $ng golden files"
else
	bad "reduce with long names: exit $rc, $ng golden files"
fi
# an artifacts folder too deep for a tensor's file: refused before the first check
deep=$tmp/d
for i in $(seq 1 20); do deep=$deep/$(printf 'd%.0s' $(seq 1 200)); done
mkdir -p "$deep"
run "$whittle" reduce long.onnx -o "$tmp/r10b.onnx" --precision fp16 --atol 0 --rtol 0 --artifacts-dir "$deep/a"
if [ "$rc" -ne 0 ] && ! grep -q '^check 1' "$tmp/err" && grep -q "bytes too long for" "$tmp/err" && ! grep -q "external --check" "$tmp/err"; then
	ok "an artifacts folder of ${#deep} bytes: refused before the search: $(grep '^whittle:' "$tmp/err" | cut -c1-60)...$(grep '^whittle:' "$tmp/err" | rev | cut -c1-90 | rev)"
else
	bad "too deep an artifacts folder: exit $rc: $(grep -m1 '^whittle:\|^check 1' "$tmp/err" | cut -c1-200)"
fi

# ---- 13 ----
run "$whittle" run one.onnx --layer-precisions relu:fp32,relu:fp16
one_line "--layer-precisions relu:fp32,relu:fp16" 2 "layer 'relu' is given twice"
run "$whittle" run one.onnx --layer-precisions dup-layers.json
one_line "--layer-precisions JSON naming relu twice" 3 "duplicate object key"
for t in space empty dup; do
	run "$whittle" run ext-$t/model.onnx
	one_line "external data offset ($t)" 3 "external data (offset|key)"
done
run "$whittle" run ext-ok/model.onnx
if [ "$rc" -eq 0 ]; then ok "external data offset 24 length 24: read"; else bad "external data offset 24: exit $rc"; fi
run "$whittle" run one.onnx --load-inputs trail
one_line ".npy with a byte after its data" 3 "1 bytes after the .npy data"
run "$whittle" run one.onnx --load-inputs both
one_line ".pb with raw_data and float_data" 3 "both raw_data and typed values"
run "$whittle" run one.onnx --val-range -1e39,1
one_line "--val-range -1e39,1" 2 "not finite in float32"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1 run "$whittle" run dyn.onnx --input-shapes x:1000000x1000000
# (under ASan, its own warning about the failed allocation comes first)
sed -i '/^==[0-9]*==WARNING: AddressSanitizer failed to allocate/d' "$tmp/err"
one_line "a 4 TB generated input" 3 "^whittle: input 'x': float32\[1000000x1000000\] is 4e\+03 GB"
# run stopped by SIGTERM: stopped, no checks to speak of
"$whittle" run dyn.onnx --input-shapes x:2048x2048 --iterations 1000000 >"$tmp/out" 2>"$tmp/err" &
pid=$!
sleep 1
kill -TERM $pid
rc=0
wait $pid || rc=$?
if [ "$rc" -eq 143 ] && grep -q "interrupted by SIGTERM: stopped" "$tmp/err" && ! grep -q "checks stopped" "$tmp/err"; then
	ok "run stopped by SIGTERM: $(cat "$tmp/err")"
else
	bad "run stopped by SIGTERM: exit $rc"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
