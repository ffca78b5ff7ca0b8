#!/bin/bash
# --artifacts FILE (reduce, build, repeat): files the check writes at a fixed path, moved
# after each check into DIR/good or DIR/bad by its verdict.
#  - with -j above 1 the checks in flight write the same path, so a check's file was sorted
#    by another's verdict or lost (reduce did this: 7 checks, 3 files, each holding another
#    candidate's): reduce, build and repeat refuse it with the same one line, exit 2, before
#    any work (no artifacts folder);
#  - with -j 1, reduce sorts one file per check, each into the folder of its own verdict and
#    numbered as its own candidate (the check writes its verdict and candidate folder in it);
#  - -j 2 with --artifacts-dir alone works and reduces to what -j 1 does.
# Environment (set by ctest): WHITTLE. Needs /usr/bin/python3 with onnx.
set -uo pipefail
whittle=${WHITTLE:?set by ctest}
. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

cd "$tmp" || exit 1
/usr/bin/python3 - <<'PY'
import onnx
from onnx import helper as h, TensorProto as T
nodes = [h.make_node("Relu", ["t%d" % i], ["t%d" % (i + 1)], name="n%d" % i) for i in range(8)]
g = h.make_graph(nodes, "chain", [h.make_tensor_value_info("t0", T.FLOAT, [4])], [h.make_tensor_value_info("t8", T.FLOAT, [4])])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, "chain.onnx")
PY
# fails while the candidate holds node n3; writes its verdict and candidate folder to art.txt
cat >check.sh <<'SH'
#!/bin/bash
sleep 0.2
if grep -q n3 "$1"; then v=bad; else v=good; fi
echo "$v $(basename "$(dirname "$1")")" >art.txt
[ $v = good ]
SH
chmod +x check.sh
check=(--check ./check.sh '{model}')

msg="--artifacts with -j 2: the checks in flight would write the same files, and each would be sorted by another's verdict (give -j 1)"
refused() { # LABEL CMD... : exit 2, exactly "whittle: <cmd>: $msg", no folder D
	local label=$1 cmd=$3
	shift
	rm -rf D
	run "$@"
	if [ "$rc" -eq 2 ] && [ "$(cat "$tmp/err")" = "whittle: $cmd: $msg" ] && [ ! -e D ]; then
		ok "$label: refused in one line, exit 2, nothing written"
	else
		bad "$label: exit $rc, $(head -c 300 "$tmp/err"), D $([ -e D ] && echo exists || echo absent)"
	fi
}
refused "reduce --artifacts -j 2" "$whittle" reduce chain.onnx -o min.onnx -j 2 --artifacts-dir D --artifacts art.txt "${check[@]}"
refused "build --artifacts -j 2" "$whittle" build chain.onnx --until 2 -j 2 --artifacts-dir D --artifacts art.txt --check true '{tactics}'
refused "repeat --artifacts -j 2" "$whittle" repeat --until 2 -j 2 --artifacts-dir D --artifacts art.txt --check true

rm -rf D art.txt
run "$whittle" reduce chain.onnx -o min1.onnx -j 1 --artifacts-dir D --artifacts art.txt "${check[@]}"
checks=$(sed -n 's/.* in \([0-9]*\) checks.*/\1/p' "$tmp/err")
files=0 wrong=""
for f in D/good/* D/bad/*; do
	[ -f "$f" ] || continue
	files=$((files + 1))
	seq=$(basename "$f" | sed 's/_art.txt$//')
	read -r verdict cand <"$f"
	[ "$(basename "$(dirname "$f")")" = "$verdict" ] && [ "$cand" = "c0$seq" ] || wrong="$wrong $f($verdict $cand)"
done
if [ "$rc" -eq 0 ] && [ -n "$checks" ] && [ "$files" -eq "$checks" ] && [ "$files" -ge 4 ] && [ -z "$wrong" ] && [ ! -e art.txt ]; then
	ok "reduce --artifacts -j 1: $files files of $checks checks, each in its own verdict's folder, numbered as its candidate"
else
	bad "reduce --artifacts -j 1: exit $rc, $files files of '$checks' checks, misfiled:$wrong"
fi

run "$whittle" reduce chain.onnx -o min2.onnx -j 2 --artifacts-dir D2 "${check[@]}"
if [ "$rc" -eq 0 ] && cmp -s min1.onnx min2.onnx && [ -f D2/reduced.onnx ]; then
	ok "reduce -j 2 --artifacts-dir (no --artifacts): the reduced model of -j 1"
else
	bad "reduce -j 2 --artifacts-dir: exit $rc"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
