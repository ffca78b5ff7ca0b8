#!/bin/bash
# Looking inside control flow (issue 26, acceptance 3): a network inside an If on an input
# flag (an int64 sample rate compared by Equal, or a bool), with a planted fp16 overflow in
# one layer of the taken branch (scripts/gen-control-flow.py):
#  - `precision --precision fp16` names exactly the branch's layers net/amp_norm and
#    net/amp_scale (before: "already passes", the If being one FP32 layer), says the If was
#    inlined and which branch; the written file passes `run --compare fp32` and without
#    net/amp_scale it fails; the same for the transformer block on a bool flag and for
#    nested Ifs;
#    its TensorRT hint points to --save-model (the file still has the If);
#  - `reduce` returns a subgraph of the branch that onnx.checker accepts and ONNX Runtime
#    loads (scripts/ort-run.js);
#  - `run --mark-all --compare fp32`'s diagnosis names net/amp_norm, a layer inside the
#    branch;
#  - samples that take both branches: the If stays one layer, with a note saying why;
#  - a Loop is one layer, with a note;
#  - hostile names in the branch (OSC 52, ESC, newline; tensor names shadowing the main
#    graph's): printed escaped, renamed in the inlined model, whose reduction checks and
#    runs in ONNX Runtime;
#  - sanitize --fold-constants folds an If on a constant condition, and with --bind-input
#    sr=16000 (sr=8000) the one on the sample rate, to the branch it picks, with the
#    original's outputs; --bind-input's errors are one line each;
#  - the silero VAD v5 model (@ricky0123/vad-web, its network inside If on sr), when the
#    package is installed: the diagnosis and precision's answer name layers of the branch.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC. Needs /usr/bin/python3 with onnx, numpy;
# node with onnxruntime-node in scripts/node_modules.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
py=/usr/bin/python3
tol=(--atol 1e-2 --rtol 1e-2)

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

fx=$tmp/fx
"$py" "$src/scripts/gen-control-flow.py" "$fx"

# the layers printed by the last `precision` run, sorted, space-separated
layers_found() {
	cut -f1 "$tmp/out" | sort | tr '\n' ' ' | sed 's/ $//'
}

# precision_case LABEL MODEL INPUTS IFNAME BRANCH: the answer is net/amp_norm, net/amp_scale
# (PREFIX/ for the transformer), the log says the If was inlined on BRANCH, and the answer
# passes run --compare fp32 while half of it fails.
precision_case() {
	local label=$1 model=$2 inputs=$3 ifname=$4 branch=$5 prefix=${6:-net/}
	rm -f "$tmp/lp.json"
	run "$whittle" precision "$fx/$model.onnx" --load-inputs "$fx/$inputs" --precision fp16 "${tol[@]}" -o "$tmp/lp.json"
	local got want="${prefix}amp_norm ${prefix}amp_scale"
	got=$(layers_found)
	if [ "$rc" -ne 0 ]; then
		bad "$label: precision exit $rc, 0 expected"
	elif [ "$got" != "$want" ]; then
		bad "$label: precision named [$got], expected [$want] (layers of the taken branch)"
	elif ! grep -qF "precision: If '$ifname' inlined: the sample took $branch" "$tmp/err"; then
		bad "$label: no note that If '$ifname' was inlined on $branch"
	else
		ok "$label: precision names [$got] inside the branch, and says the If was inlined"
	fi
	cp "$tmp/err" "$tmp/precision_err"
	run "$whittle" run "$fx/$model.onnx" --load-inputs "$fx/$inputs" --precision fp16 --layer-precisions "$tmp/lp.json" --compare fp32 "${tol[@]}"
	local full=$rc
	run "$whittle" run "$fx/$model.onnx" --load-inputs "$fx/$inputs" --precision fp16 --layer-precisions "${prefix}amp_norm:fp32" --compare fp32 "${tol[@]}"
	if [ "$full" -ne 0 ]; then
		bad "$label: run with the written answer: exit $full, 0 expected"
	elif [ "$rc" -ne 1 ]; then
		bad "$label: run with ${prefix}amp_norm alone at fp32: exit $rc, 1 (FAIL) expected"
	else
		ok "$label: the answer passes run --compare fp32; ${prefix}amp_norm alone fails"
	fi
}

precision_case "if_cnn (If on Equal(sr, 16000))" if_cnn if_cnn_16k If_0 then_branch
precision_case "if_transformer (If on a bool flag)" if_transformer if_transformer_on If_block then_branch blk/
precision_case "if_nested (If in an If)" if_nested if_nested_on If_outer then_branch
if grep -qF "precision: If 'If_inner' inlined: the sample took then_branch" "$tmp/precision_err"; then
	ok "if_nested: the inner If is inlined too"
else
	bad "if_nested: no note for the inner If"
fi

if grep -qF "precision: TensorRT: the answer names layers of an If's branch" "$tmp/precision_err" &&
	! grep -q "TensorRT 10: trtexec --onnx=.*if_nested.onnx" "$tmp/precision_err"; then
	ok "precision's TensorRT hint sends the user to --save-model (the file keeps the If)"
else
	bad "precision's TensorRT hint names the file with the If"
fi

# the else branch (sr 8000) has no overflow: fp16 passes, and the note says else_branch
run "$whittle" precision "$fx/if_cnn.onnx" --load-inputs "$fx/if_cnn_8k" --precision fp16 "${tol[@]}"
if [ "$rc" -eq 3 ] && grep -qF "If 'If_0' inlined: the sample took else_branch" "$tmp/err"; then
	ok "if_cnn at sr 8000: else_branch inlined, fp16 already passes (exit 3)"
else
	bad "if_cnn at sr 8000: exit $rc, 3 with an else_branch note expected"
fi

# samples that disagree: the If stays one layer, with the reason
mkdir -p "$tmp/both"
cp -r "$fx/if_cnn_16k" "$tmp/both/a"
cp -r "$fx/if_cnn_8k" "$tmp/both/b"
run "$whittle" precision "$fx/if_cnn.onnx" --load-inputs "$tmp/both" --precision fp16 "${tol[@]}"
if grep -qF "precision: If 'If_0' stays one layer: the samples took both of its branches" "$tmp/err" && ! grep -q "inlined" "$tmp/err"; then
	ok "samples taking both branches: the If stays one layer, with the note"
else
	bad "samples taking both branches: no 'stays one layer' note (or an inlined one)"
fi
# two samples that agree: inlined, "every sample"
mkdir -p "$tmp/agree"
cp -r "$fx/if_cnn_16k" "$tmp/agree/a"
cp -r "$fx/if_cnn_mixed" "$tmp/agree/b"
run "$whittle" precision "$fx/if_cnn.onnx" --load-inputs "$tmp/agree" --precision fp16 "${tol[@]}"
if [ "$rc" -eq 0 ] && grep -qF "If 'If_0' inlined: every sample took then_branch" "$tmp/err"; then
	ok "two samples on then_branch: inlined ('every sample')"
else
	bad "two samples on then_branch: exit $rc, or no 'every sample' note"
fi

# --- without inlining, the build's precision reaches inside the If (as in a TensorRT build) --
# run --precision fp16 without --mark-all runs the If as one layer: its branch's layers run at
# fp16 too, so the planted overflow fails (before: the branch ran FP32 and run said PASS), and
# the hint sends the user inside the If rather than to "--layer-precisions If_0:fp32"
run "$whittle" run "$fx/if_cnn.onnx" --load-inputs "$fx/if_cnn_16k" --precision fp16 --compare fp32 "${tol[@]}"
if [ "$rc" -eq 1 ] && grep -qF "layer 'If_0' (If) holds subgraphs" "$tmp/out" && ! grep -qF -- "--layer-precisions If_0" "$tmp/out"; then
	ok "run --precision fp16 (If not inlined): the branch runs at fp16 and fails; the hint looks inside the If"
else
	bad "run --precision fp16 (If not inlined): exit $rc, 1 (FAIL) with the subgraph hint expected"
fi
# --layer-precisions naming branch layers on the path that does not inline (--save-tactics):
# the branch's plan takes them
run "$whittle" run "$fx/if_cnn.onnx" --load-inputs "$fx/if_cnn_16k" --precision fp16 --layer-precisions net/amp_norm:fp32,net/amp_scale:fp32 \
	--compare fp32 "${tol[@]}" --save-tactics "$tmp/cf_tac.json"
both=$rc
run "$whittle" run "$fx/if_cnn.onnx" --load-inputs "$fx/if_cnn_16k" --precision fp16 --layer-precisions net/amp_norm:fp32 \
	--compare fp32 "${tol[@]}" --save-tactics "$tmp/cf_tac2.json"
if [ "$both" -eq 0 ] && [ "$rc" -eq 1 ]; then
	ok "branch layers in --layer-precisions without inlining: both at fp32 pass, net/amp_norm alone fails"
else
	bad "branch layers in --layer-precisions without inlining: exit $both and $rc, 0 and 1 expected"
fi
# convert writes no subgraph: a branch layer in --layer-precisions is one clear line, exit 2
run "$whittle" convert "$fx/if_cnn.onnx" --precision fp16 --layer-precisions net/amp_norm:fp32 -o "$tmp/cf_conv.onnx"
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF "is inside a subgraph" "$tmp/err" && [ ! -e "$tmp/cf_conv.onnx" ]; then
	ok "convert with a branch layer: one line (inside a subgraph; inline it first), exit 2, no file"
else
	bad "convert with a branch layer: exit $rc, 2 with one line expected"
fi
# triage looks inside the If: it names the branch's layer, writes the inlined model, and the
# convert command its answer gives works on that file
run "$whittle" triage "$fx/if_cnn.onnx" --load-inputs "$fx/if_cnn_16k" --precision fp16 "${tol[@]}" --artifacts-dir "$tmp/tri" --builds 1
if [ "$rc" -eq 0 ] && grep -qF "step 3: layer 'net/amp_norm' (Pow) alone" "$tmp/err" && [ -s "$tmp/tri/model-inlined.onnx" ] &&
	grep -qF "whittle convert $tmp/tri/model-inlined.onnx" "$tmp/out" &&
	"$whittle" convert "$tmp/tri/model-inlined.onnx" --precision fp16 --layer-precisions "$tmp/tri/layer-precisions.json" -o "$tmp/tri_conv.onnx" >/dev/null 2>&1; then
	ok "triage: names net/amp_norm inside the If, writes model-inlined.onnx, and its convert command works"
else
	bad "triage on if_cnn: exit $rc; expected the branch's net/amp_norm, model-inlined.onnx and a working convert"
fi

# --- reduce: a subgraph of the branch, which onnx.checker and ONNX Runtime accept -----------
ortcheck() {
	local model=$1
	"$py" -c "import onnx,sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)" "$model" 2>"$tmp/err" &&
		mkdir -p "$tmp/oin" "$tmp/oout" && rm -f "$tmp/oin"/* "$tmp/oout"/* &&
		node "$src/scripts/ort-run.js" "$model" "$tmp/oin" "$tmp/oout" --seed 1 >/dev/null 2>>"$tmp/err"
}
for c in "if_cnn if_cnn_16k net/" "if_transformer if_transformer_on blk/"; do
	set -- $c
	run "$whittle" reduce "$fx/$1.onnx" --load-inputs "$fx/$2" --precision fp16 "${tol[@]}" -o "$tmp/red_$1.onnx"
	nodes=$("$py" -c "import onnx,sys; print(' '.join(n.name for n in onnx.load(sys.argv[1]).graph.node))" "$tmp/red_$1.onnx" 2>/dev/null || true)
	if [ "$rc" -ne 0 ]; then
		bad "reduce $1: exit $rc, 0 expected"
	elif [ -z "$nodes" ] || [ -n "$(printf '%s\n' $nodes | grep -v "^$3")" ]; then
		bad "reduce $1: layers [$nodes], expected layers of the branch ($3...)"
	elif ! printf '%s\n' $nodes | grep -qx "$3amp_norm"; then
		bad "reduce $1: layers [$nodes] lack the overflowing $3amp_norm"
	elif ! ortcheck "$tmp/red_$1.onnx"; then
		bad "reduce $1: the reduced model fails onnx.checker or ONNX Runtime"
	else
		ok "reduce $1: [$nodes], a subgraph of the branch; onnx.checker and ONNX Runtime accept it"
	fi
done

# --- run --mark-all's diagnosis names the layer inside the branch ---------------------------
run "$whittle" run "$fx/if_cnn.onnx" --load-inputs "$fx/if_cnn_16k" --precision fp16 --compare fp32 --mark-all "${tol[@]}"
if [ "$rc" -eq 1 ] && grep -qE "^compare: FAIL: .*where it starts: net/amp_norm_out \(layer net/amp_norm, Pow\): overflow" "$tmp/out" "$tmp/err"; then
	ok "run --mark-all: the diagnosis names net/amp_norm inside the branch"
else
	bad "run --mark-all: exit $rc, no diagnosis naming net/amp_norm"
fi
# without --mark-all nothing is inlined: the run is the model as it is (and fails)
run "$whittle" run "$fx/if_cnn.onnx" --load-inputs "$fx/if_cnn_16k" --precision fp32 --fill-missing
if [ "$rc" -eq 0 ] && ! grep -q "inlined" "$tmp/err"; then
	ok "run without --mark-all/--layer-precisions: no inlining"
else
	bad "run without --mark-all: exit $rc, or it inlined"
fi

# --- Loop: one layer, with a note ----------------------------------------------------------
run "$whittle" precision "$fx/loop_small.onnx" --load-inputs "$fx/loop_small" --precision fp16 "${tol[@]}"
if [ "$rc" -eq 0 ] && grep -qF "precision: Loop 'loop3' stays one layer: whittle does not look inside Loop and Scan bodies" "$tmp/err" &&
	[ "$(layers_found)" = "amp_norm amp_scale" ]; then
	ok "loop_small: the Loop is one layer with a note; the answer is amp_norm amp_scale"
else
	bad "loop_small: exit $rc, layers [$(layers_found)], or no Loop note"
fi

# --- hostile names inside the branch --------------------------------------------------------
run "$whittle" precision "$fx/if_hostile.onnx" --load-inputs "$fx/if_hostile_16k" --precision fp16 "${tol[@]}"
if [ "$rc" -ne 0 ]; then
	bad "if_hostile: precision exit $rc, 0 expected"
elif grep -q $'\x1b' "$tmp/out" "$tmp/err"; then
	bad "if_hostile: a raw ESC reached the terminal"
elif ! grep -qF 'net/amp\x1b]52;c;AA==\x07norm' "$tmp/out"; then
	bad "if_hostile: the planted layer is not named, escaped"
else
	ok "if_hostile: precision names the hostile layer, escaped"
fi
run "$whittle" reduce "$fx/if_hostile.onnx" --load-inputs "$fx/if_hostile_16k" --precision fp16 --validate --no-reduce-outputs -o "$tmp/red_h.onnx"
names=$("$py" -c "import onnx,sys; g=onnx.load(sys.argv[1]).graph; print(' '.join(sorted({i for n in g.node for i in list(n.input)+list(n.output)})))" "$tmp/red_h.onnx" 2>/dev/null || true)
if [ "$rc" -ne 0 ]; then
	bad "if_hostile: reduce exit $rc"
elif ! ortcheck "$tmp/red_h.onnx"; then
	bad "if_hostile: the reduced model fails onnx.checker or ONNX Runtime"
else
	ok "if_hostile: reduce's model (tensors: $names) passes onnx.checker and runs in ONNX Runtime"
fi
run "$whittle" run "$fx/if_hostile.onnx" --load-inputs "$fx/if_hostile_16k" --mark-all --compare fp32 --precision fp16 "${tol[@]}"
if grep -q '^output h__1 ' "$tmp/out" && grep -q '^output cond__1 ' "$tmp/out" && grep -q '^output h ' "$tmp/out"; then
	ok "if_hostile: branch tensors named like main-graph ones are renamed (h__1, cond__1), the main graph's kept"
else
	bad "if_hostile: no renamed h__1/cond__1 beside the main graph's h"
fi

# --- sanitize: an If on a constant condition, and --bind-input -------------------------------
# sanitize_case LABEL MODEL ARGS... -- WANT_OPS: the written model has exactly these op types
# and the original's outputs on the same x
sanitize_case() {
	local label=$1 model=$2
	shift 2
	local args=()
	while [ "$1" != "--" ]; do
		args+=("$1")
		shift
	done
	shift
	rm -f "$tmp/s.onnx"
	run "$whittle" sanitize "$fx/$model.onnx" -o "$tmp/s.onnx" "${args[@]}"
	local ops
	ops=$("$py" -c "import onnx,sys; m=onnx.load(sys.argv[1]); onnx.checker.check_model(m, full_check=True); print(' '.join(n.op_type for n in m.graph.node))" "$tmp/s.onnx" 2>/dev/null || echo "(unreadable)")
	if [ "$rc" -ne 0 ]; then
		bad "$label: sanitize exit $rc"
	elif [ "$ops" != "$*" ]; then
		bad "$label: layers [$ops], expected [$*]"
	else
		ok "$label: [$ops] ($(grep -o '[0-9]* If layers\? replaced by [a-z]* branch' "$tmp/out" || echo 'no If replaced'))"
	fi
}
sanitize_case "sanitize --fold-constants, If on an initializer" if_const --fold-constants -- Relu
sanitize_case "sanitize without --bind-input: the If on sr stays" if_bound --fold-constants -- Equal If
sanitize_case "sanitize --bind-input sr=16000" if_bound --fold-constants --bind-input sr=16000 -- Relu
sanitize_case "sanitize --bind-input sr=8000" if_bound --fold-constants --bind-input sr=8000 -- Neg
sanitize_case "sanitize nested, --bind-input sr=16000,flag=true" if_nested --fold-constants --bind-input sr=16000,flag=true -- Pow Mul Mul Conv Relu Conv Relu GlobalAveragePool Flatten Gemm
# the folded model computes what the original did
run "$whittle" sanitize "$fx/if_cnn.onnx" -o "$tmp/folded.onnx" --fold-constants --bind-input sr=16000
"$py" - "$fx/if_cnn_16k" "$tmp/nosr" <<'EOF'
import os, shutil, sys
from onnx import TensorProto
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
for f in os.listdir(src):
    t = TensorProto()
    t.ParseFromString(open(os.path.join(src, f), "rb").read())
    if t.name != "sr":
        shutil.copy(os.path.join(src, f), os.path.join(dst, t.name + ".pb"))
EOF
run "$whittle" run "$fx/if_cnn.onnx" --load-inputs "$fx/if_cnn_16k" --hash-outputs
h1=$(grep '^xxh3 ' "$tmp/out" || true)
run "$whittle" run "$tmp/folded.onnx" --load-inputs "$tmp/nosr" --hash-outputs
h2=$(grep '^xxh3 ' "$tmp/out" || true)
if [ -n "$h1" ] && [ "$h1" = "$h2" ]; then
	ok "sanitize --bind-input sr=16000: the folded model gives the original's outputs (same hash)"
else
	bad "sanitize --bind-input sr=16000: outputs differ ([$h1] vs [$h2])"
fi

# expect_error LABEL CODE CMD...: exit CODE, one error line, nothing on stdout
expect_error() {
	local label=$1 code=$2
	shift 2
	run "$@"
	if [ "$rc" -ne "$code" ]; then
		bad "$label: exit $rc, $code expected"
	elif [ "$(grep -c '^whittle: ' "$tmp/err")" -ne 1 ] || ! grep -qE '^whittle: .+: .+ \(.+\)$' "$tmp/err"; then
		bad "$label: not one error line 'whittle: <what>: <why> (<what to do>)'"
	elif [ -s "$tmp/out" ]; then
		bad "$label: printed on stdout"
	else
		ok "$label: exit $code: $(cat "$tmp/err")"
	fi
}
expect_error "--bind-input without --fold-constants" 2 "$whittle" sanitize "$fx/if_bound.onnx" -o "$tmp/e.onnx" --bind-input sr=16000
expect_error "--bind-input without a value" 2 "$whittle" sanitize "$fx/if_bound.onnx" -o "$tmp/e.onnx" --fold-constants --bind-input sr
expect_error "--bind-input of an unknown input" 3 "$whittle" sanitize "$fx/if_bound.onnx" -o "$tmp/e.onnx" --fold-constants --bind-input nope=1
expect_error "--bind-input of a 1x4 input" 3 "$whittle" sanitize "$fx/if_bound.onnx" -o "$tmp/e.onnx" --fold-constants --bind-input x=1
expect_error "--bind-input of a fraction to int64" 2 "$whittle" sanitize "$fx/if_bound.onnx" -o "$tmp/e.onnx" --fold-constants --bind-input sr=8.5
expect_error "--bind-input twice for one input" 2 "$whittle" sanitize "$fx/if_bound.onnx" -o "$tmp/e.onnx" --fold-constants --bind-input sr=1,sr=2
[ ! -e "$tmp/e.onnx" ] && ok "no model written on an error" || bad "a model was written on an error"

# --- a real model: silero VAD v5, its network inside If on sr --------------------------------
vad=$src/scripts/node_modules/@ricky0123/vad-web/dist/silero_vad_v5.onnx
if [ ! -f "$vad" ]; then
	echo "skip silero VAD: @ricky0123/vad-web is not installed (cd scripts && ONNXRUNTIME_NODE_INSTALL=skip npm ci)"
else
	"$py" - "$tmp/vad" <<'EOF'
import os, sys
import numpy as np
from onnx import numpy_helper
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(1)
x = (rng.standard_normal((1, 512)) * 0.1).astype(np.float32)
for n, a in [("input", x), ("state", np.zeros((2, 1, 128), np.float32)), ("sr", np.array(16000, np.int64))]:
    open(os.path.join(d, n + ".pb"), "wb").write(numpy_helper.from_array(a, n).SerializeToString())
EOF
	run "$whittle" run "$vad" --load-inputs "$tmp/vad" --precision fp16 --compare fp32 --mark-all
	start=$(grep -oE 'where it starts: [^ ]+' "$tmp/out" "$tmp/err" | head -1 || true)
	if grep -qF "run: If 'If_0' inlined: the sample took then_branch" "$tmp/err" && [[ "$start" == *"If_0_then_branch__Inline_0__/"* ]]; then
		ok "silero VAD v5: the diagnosis names a layer of the branch (${start#*: })"
	else
		bad "silero VAD v5: no inlining note, or the diagnosis names [$start]"
	fi
	run "$whittle" precision "$vad" --load-inputs "$tmp/vad" --precision fp16 -o "$tmp/vad_lp.json"
	# the answer's layers: none is the If itself, and most are nodes of its then_branch
	# (nested Ifs' branches included)
	inside=$("$py" - "$vad" "$tmp/vad_lp.json" <<'EOF'
import json, sys
import onnx
m = onnx.load(sys.argv[1])
def names(g):
    for n in g.node:
        yield n.name
        for a in n.attribute:
            if a.g.node:
                yield from names(a.g)
ifn = [n for n in m.graph.node if n.op_type == "If"][0]
branch = set(names([a.g for a in ifn.attribute if a.name == "then_branch"][0]))
layers = json.load(open(sys.argv[2]))["layers"]
ins = sum(k in branch for k in layers)
print("%d %d %d" % (len(layers), ins, ifn.name in layers))
EOF
)
	read -r n_all n_in n_if <<<"${inside:-0 0 1}"
	if [ "$rc" -ne 0 ] || [ "$n_if" -ne 0 ] || [ "$n_in" -eq 0 ] || [ $((n_in * 2)) -lt "$n_all" ]; then
		bad "silero VAD v5: precision exit $rc; $n_in of its $n_all layers in the branch, the If itself among them: $n_if"
	else
		run "$whittle" run "$vad" --load-inputs "$tmp/vad" --precision fp16 --layer-precisions "$tmp/vad_lp.json" --compare fp32
		if [ "$rc" -eq 0 ]; then
			ok "silero VAD v5: precision keeps $n_all layers, $n_in of them in the branch (the If not one of them); its answer passes run --compare fp32"
		else
			bad "silero VAD v5: run with precision's answer: exit $rc, 0 expected"
		fi
	fi
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
