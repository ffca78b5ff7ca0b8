#!/bin/bash
# Reduced-precision emulation of a generated decoder (scripts/gen-decoder.py, weights in an
# external-data file): the embedding Gather at fp16 and bf16 reads its table as it is and
# rounds the rows it selects (executor/emulate.c: selection ops round their outputs, not a
# copy of a constant input); numpy's rounding of the same rows is the oracle, bit for bit.
# Also: a run whose weight copies do not all fit the cache's budget gives the same bits on
# every iteration (--iterations: later runs read what earlier ones kept or converted anew).
# Environment (set by ctest): WHITTLE, WHITTLE_SRC.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-e2e-emul-weights.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$tmp/m"
$py "$src/scripts/gen-decoder.py" "$tmp/m/d.onnx" --layers 2 --hidden 64 --heads 4 --seq 8 --vocab 256 \
	--external-data d.data --seed 5
for p in fp16 bf16; do
	"$whittle" run "$tmp/m/d.onnx" --seed 2 --precision "$p" --mark-all --save-inputs "$tmp/in" \
		--save-outputs "$tmp/out-$p" >/dev/null || fail "run --precision $p: exit $?"
done
$py - "$tmp/m/d.onnx" "$tmp/in" "$tmp/out-fp16" "$tmp/out-bf16" <<'PY' || fail "embedding rows differ from numpy's rounding"
import sys, glob, os
import numpy as np
import onnx
from onnx import numpy_helper
model, ins, o16, obf = sys.argv[1:]
m = onnx.load(model)  # with its external data
embed = next(numpy_helper.to_array(t) for t in m.graph.initializer if t.name == "embed_tokens")
gather = next(n for n in m.graph.node if n.op_type == "Gather" and n.input[0] == "embed_tokens")
ids = numpy_helper.to_array(onnx.load_tensor(glob.glob(os.path.join(ins, "*.pb"))[0]))
rows = embed[ids]
def load(d):
    return numpy_helper.to_array(onnx.load_tensor(os.path.join(d, gather.output[0] + ".pb")))
want16 = rows.astype(np.float16).astype(np.float32)
# bf16: round to nearest even on the upper 16 bits (no NaN in the table)
u = rows.astype(np.float32).view(np.uint32).astype(np.uint64)
wantbf = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
for name, want, got in (("fp16", want16, load(o16)), ("bf16", wantbf, load(obf))):
    assert got.dtype == np.float32 and got.shape == want.shape, (name, got.dtype, got.shape)
    bad = np.count_nonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad == 0, f"{name}: {bad} of {got.size} elements differ"
    assert np.count_nonzero(want != rows) > 0, f"{name}: rounding changed nothing (the test would not see a missing one)"
print(f"embedding rows: fp16 and bf16 bit-identical to numpy ({rows.size} elements)")
PY
# every iteration the same outputs
"$whittle" run "$tmp/m/d.onnx" --seed 2 --precision int8 --iterations 3 --save-outputs "$tmp/i8" >/dev/null ||
	fail "run --precision int8 --iterations 3: exit $?"
"$whittle" run "$tmp/m/d.onnx" --seed 2 --precision int8 --save-outputs "$tmp/i8b" >/dev/null
cmp -s "$tmp/i8/logits.pb" "$tmp/i8b/logits.pb" || fail "int8: outputs after 3 iterations differ from one run"
echo "e2e-emul-weights: ok"
