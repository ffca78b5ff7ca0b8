#!/bin/bash
# Large-model handling on a small generated decoder (scripts/gen-decoder.py; the 2 GiB
# limits are lowered with --max-inline-size / --save-external-data so that every external
# path runs in seconds):
# - every model whittle writes (extract of the whole model and of one layer, sanitize, the
#   saving options, a subgraph of a subgraph, an inline fp16 model pushed to external data)
#   loads in the onnx package (load_external_data, checker) and in ONNX Runtime, and gives
#   ONNX Runtime's outputs of the original on the same inputs (tests/bigmodel-check.py);
# - extracting the whole model links the original's weights file (same inode) and writes
#   less than 1 MB of new bytes; a saved folder never links outside itself except to the
#   original's weights file; on another file system (no hard link) the weights it needs are
#   written instead;
# - hostile external data (truncated file, offset past the end, a path leaving the folder, a
#   symlink out) is one line and exit 3;
# - a reduce whose external check loads every candidate with onnx + ONNX Runtime.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
py=/usr/bin/python3
ortrun=$src/scripts/ort-run.js
chk=$src/tests/bigmodel-check.py

tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-e2e-bigmodel.XXXXXX")
shm=""
trap 'rm -rf "$tmp" ${shm:+"$shm"}' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# the original: 2 layers, float32, every weight of 1 KiB or more in orig/d.data
mkdir -p "$tmp/orig" "$tmp/in" "$tmp/ref"
$py "$src/scripts/gen-decoder.py" "$tmp/orig/d.onnx" --layers 2 --hidden 64 --heads 4 --seq 8 --vocab 256 \
	--external-data d.data --seed 3
$py "$src/scripts/gen-decoder.py" "$tmp/d16.onnx" --layers 2 --hidden 64 --heads 4 --seq 8 --vocab 256 \
	--dtype float16 --seed 4
# reference: ONNX Runtime on the same decoder with its weights inline (the same seed gives
# the same weights), every intermediate tensor too (for the layer cut: ort-run.js --all
# reads models with weights inline only); the original itself must agree with it
$py "$src/scripts/gen-decoder.py" "$tmp/inline.onnx" --layers 2 --hidden 64 --heads 4 --seq 8 --vocab 256 --seed 3
node "$ortrun" "$tmp/inline.onnx" "$tmp/in" "$tmp/ref" --seed 1 --all >/dev/null
$py "$chk" "$tmp/orig/d.onnx" "$tmp/in" "$tmp/ref"
mkdir -p "$tmp/in16" "$tmp/ref16"
node "$ortrun" "$tmp/d16.onnx" "$tmp/in16" "$tmp/ref16" --seed 1 >/dev/null
ino() { stat -c %i "$1"; }
orig_ino=$(ino "$tmp/orig/d.data")

# new bytes under a folder: files that are not the original's weights file
new_bytes() {
	local total=0 f
	while IFS= read -r f; do
		[ "$(ino "$f")" = "$orig_ino" ] && continue
		total=$((total + $(stat -c %s "$f")))
	done < <(find "$1" -type f)
	echo "$total"
}
# every link in a folder points at the original's weights file
links_inside() {
	local l
	while IFS= read -r l; do
		[ "$(readlink -f "$l")" = "$(readlink -f "$tmp/orig/d.data")" ] || fail "$l links outside its folder"
	done < <(find "$1" -type l)
}

# 1. extract the whole model: the weights file is linked, kilobytes written
mkdir -p "$tmp/whole"
"$whittle" extract "$tmp/orig/d.onnx" -o "$tmp/whole/d.onnx" --inputs input_ids --outputs logits >/dev/null
[ "$(ino "$tmp/whole/d.data")" = "$orig_ino" ] || fail "extract of the whole model did not link the weights file"
nb=$(new_bytes "$tmp/whole")
[ "$nb" -lt 1000000 ] || fail "extract of the whole model wrote $nb new bytes"
$py "$chk" "$tmp/whole/d.onnx" "$tmp/in" "$tmp/ref"

# 2. one layer, cut out of the middle (its input is an intermediate tensor)
mkdir -p "$tmp/layer" "$tmp/layer-in"
"$whittle" extract "$tmp/orig/d.onnx" -o "$tmp/layer/l1.onnx" --inputs layer0_residual2_out \
	--outputs layer1_residual2_out >/dev/null
cp "$tmp/ref/layer0_residual2_out.pb" "$tmp/layer-in/"
[ "$(ino "$tmp/layer/d.data")" = "$orig_ino" ] || fail "extract of one layer did not link the weights file"
$py "$chk" "$tmp/layer/l1.onnx" "$tmp/layer-in" "$tmp/ref"
# a subgraph of the subgraph, into another folder: still the original's file
mkdir -p "$tmp/layer2"
"$whittle" extract "$tmp/layer/l1.onnx" -o "$tmp/layer2/mlp.onnx" --inputs layer0_residual2_out \
	--outputs layer1_residual2_out >/dev/null
[ "$(ino "$tmp/layer2/d.data")" = "$orig_ino" ] || fail "a subgraph of a subgraph did not link the original weights"
$py "$chk" "$tmp/layer2/mlp.onnx" "$tmp/layer-in" "$tmp/ref"
# saved next to the original: nothing new but the model file
"$whittle" extract "$tmp/orig/d.onnx" -o "$tmp/orig/copy.onnx" --inputs input_ids --outputs logits >/dev/null
[ "$(find "$tmp/orig" -type f | wc -l)" = 3 ] || fail "saving next to the original wrote more than the model file"
[ "$(stat -c %h "$tmp/orig/d.data")" = 4 ] || fail "the original's weights file has $(stat -c %h "$tmp/orig/d.data") links, 4 expected"

# 3. sanitize over a lowered inline limit (whittle's 2 GiB rule at 10 KiB), self-contained:
#    a new weights file next to the model
mkdir -p "$tmp/san"
"$whittle" sanitize "$tmp/orig/d.onnx" -o "$tmp/san/s.onnx" --self-contained --max-inline-size 10K >/dev/null
[ -f "$tmp/san/s.onnx.data" ] || fail "sanitize over --max-inline-size wrote no external data"
[ "$(ino "$tmp/san/s.onnx.data")" != "$orig_ino" ] || fail "--self-contained linked the original"
[ "$(stat -c %s "$tmp/san/s.onnx")" -lt 20000 ] || fail "sanitize kept large weights inline"
$py "$chk" "$tmp/san/s.onnx" "$tmp/in" "$tmp/ref"

# 4. one file per tensor, threshold 8K, explicit path options
mkdir -p "$tmp/per" "$tmp/named"
"$whittle" extract "$tmp/orig/d.onnx" -o "$tmp/per/p.onnx" --inputs input_ids --outputs logits \
	--save-external-data --no-save-all-tensors-to-one-file --external-data-size-threshold 8K --self-contained >/dev/null
[ -f "$tmp/per/layer1.w_up" ] && [ ! -e "$tmp/per/d.data" ] || fail "--no-save-all-tensors-to-one-file"
$py "$chk" "$tmp/per/p.onnx" "$tmp/in" "$tmp/ref"
"$whittle" extract "$tmp/orig/d.onnx" -o "$tmp/named/n.onnx" --inputs input_ids --outputs logits \
	--external-data-path weights/n.bin >/dev/null
[ -f "$tmp/named/weights/n.bin" ] && [ ! -e "$tmp/named/d.data" ] || fail "--external-data-path"
$py "$chk" "$tmp/named/n.onnx" "$tmp/in" "$tmp/ref"
rc=0
"$whittle" extract "$tmp/orig/d.onnx" -o "$tmp/named/x.onnx" --outputs logits --external-data-path ../x.bin 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "--external-data-path ../x.bin: exit $rc, 2 expected"

# 5. an inline float16 model pushed over the lowered limit
mkdir -p "$tmp/h"
"$whittle" extract "$tmp/d16.onnx" -o "$tmp/h/h.onnx" --inputs input_ids --outputs logits --max-inline-size 64K >/dev/null
[ -f "$tmp/h/h.onnx.data" ] || fail "fp16 model over --max-inline-size: no external data"
$py "$chk" "$tmp/h/h.onnx" "$tmp/in16" "$tmp/ref16"

# 5b. saved on another file system (no hard link possible): the weights it needs are written
#     (a symbolic link out of the folder would be refused by ONNX Runtime and by whittle)
if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -c %d /dev/shm)" != "$(stat -c %d "$tmp")" ]; then
	shm=$(mktemp -d /dev/shm/whittle-e2e-bigmodel.XXXXXX)
	"$whittle" extract "$tmp/orig/d.onnx" -o "$shm/x.onnx" --inputs input_ids --outputs logits --max-inline-size 64K \
		>/dev/null 2>"$tmp/err"
	grep -q "cannot hard-link" "$tmp/err" || fail "no warning when the weights file cannot be linked"
	[ -z "$(find "$shm" -type l)" ] || fail "a symbolic link was made across file systems"
	[ -f "$shm/x.onnx.data" ] || fail "across file systems: no weights written"
	"$whittle" inspect "$shm/x.onnx" >/dev/null || fail "whittle cannot load what it saved across file systems"
	$py "$chk" "$shm/x.onnx" "$tmp/in" "$tmp/ref"
fi

# whittle reads back everything it wrote, with the same hash as the model it saved from
for m in whole/d.onnx layer/l1.onnx san/s.onnx per/p.onnx named/n.onnx h/h.onnx; do
	"$whittle" inspect "$tmp/$m" >/dev/null || fail "whittle cannot load its own $m"
done
for d in whole layer layer2 san per named h; do links_inside "$tmp/$d"; done

# 6. hostile external data: one line, exit 3
hostile() {
	local label=$1 dir=$2 rc=0
	"$whittle" inspect "$dir/d.onnx" >/dev/null 2>"$tmp/err" || rc=$?
	[ "$rc" = 3 ] || fail "$label: exit $rc, 3 expected"
	[ "$(wc -l <"$tmp/err")" = 1 ] && grep -qE '^whittle: .+: .+ \(.+\)$' "$tmp/err" || fail "$label: not one error line"
}
mk_case() { mkdir -p "$tmp/$1"; cp "$tmp/orig/d.onnx" "$tmp/$1/"; }
mk_case trunc; cp "$tmp/orig/d.data" "$tmp/trunc/"; truncate -s 100000 "$tmp/trunc/d.data"
hostile "truncated weights file" "$tmp/trunc"
mk_case outside; mkdir -p "$tmp/outside/sub"; mv "$tmp/outside/d.onnx" "$tmp/outside/sub/d.onnx"
cp "$tmp/orig/d.data" "$tmp/outside/"
$py - "$tmp/outside/sub/d.onnx" <<'EOF'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
for t in m.graph.initializer:
    for e in t.external_data:
        if e.key == "location":
            e.value = "../d.data"
onnx.save(m, sys.argv[1])
EOF
hostile "a path leaving the folder" "$tmp/outside/sub"
mk_case link; ln -s "$tmp/orig/d.data" "$tmp/link/d.data"
hostile "a symlink out of the folder" "$tmp/link"
mk_case offset; cp "$tmp/orig/d.data" "$tmp/offset/"
$py - "$tmp/offset/d.onnx" <<'EOF'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
t = [t for t in m.graph.initializer if t.external_data][-1]
for e in t.external_data:
    if e.key == "offset":
        e.value = str(1 << 40)
onnx.save(m, sys.argv[1])
EOF
hostile "an offset past the end" "$tmp/offset"

# 7. reduce with an external check that loads every candidate in onnx and ONNX Runtime
#    (and checks its outputs against whittle's reference values); fails while the
#    candidate holds layer1's MLP up projection (a MatMul with a weight)
"$whittle" reduce "$tmp/orig/d.onnx" -o "$tmp/red/reduced.onnx" --artifacts-dir "$tmp/red" --mode bisect -j 2 \
	--check $py "$chk" {model} {inputs} {golden} --log "$tmp/red.log" --fail-if-node layer1_up >/dev/null 2>"$tmp/red.err" ||
	{ cat "$tmp/red.err"; fail "reduce with an external check"; }
n_ok=$(grep -c '^OK ' "$tmp/red.log" || true)
if grep -q '^BAD ' "$tmp/red.log"; then grep '^BAD ' "$tmp/red.log" | head -3; fail "a candidate did not load or run"; fi
[ "$n_ok" -ge 5 ] || fail "only $n_ok candidates were checked"
[ "$(ino "$tmp/red/d.data")" = "$orig_ino" ] || fail "the reduced model does not link the original weights"
links_inside "$tmp/red"
echo "e2e-bigmodel: ok ($n_ok reduce candidates loaded in onnx and ONNX Runtime)"
