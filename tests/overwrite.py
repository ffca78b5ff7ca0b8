#!/usr/bin/python3
"""Nothing the user has is ever overwritten (issue 22), for tests/e2e-overwrite.sh.

    overwrite.py SRC WHITTLE WORKDIR

Reads the option table (SRC/reducer/cli/options.c: each row's commands and its path marks,
enum wh_cli_path) and, for EVERY command and EVERY option marked as writing (WH_PATH_WRITE,
WH_PATH_WRITE_DIR, WH_PATH_SAVE_NAME), runs the command on the models of
scripts/gen-overwrite.py with that option aimed at:
  - the input model, a symbolic link to it, and each of its two external-data files: the
    command must refuse with one line "whittle: ..." and exit 2 or 3;
  - a fresh name in out/, a folder holding another model whose weights file has the name of
    the input's (out/w.bin): whatever the command does, out/w.bin stays.
After every run, every file the user had (orig/ and out/) has the hash it had before. An
option added to the table with a write mark is in the loop without a change here; a command
the loop has no arguments for fails the test.
Prints "ok"/"FAIL" lines and "overwrite: N failures"; exits 1 when there are any.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys

def table(src):
    """[(command, option name, letter or None, marks)] for every option with a write mark."""
    h = open(os.path.join(src, "reducer/cli/options.h")).read()
    bits = {m.group(1): 1 << int(m.group(2)) for m in re.finditer(r"(WH_CMD_\w+) = 1u << (\d+)", h)}
    marks_of = {m.group(1): 1 << int(m.group(2)) for m in re.finditer(r"(WH_PATH_\w+) = 1u << (\d+)", h)}
    c = open(os.path.join(src, "reducer/cli/options.c")).read()
    defs = dict(re.findall(r"#define (\w+) (.*)", c))

    def value(expr, names):
        for _ in range(8):
            expr = re.sub(r"\b([A-Z_]+)\b", lambda m: "(%s)" % defs[m.group(1)] if m.group(1) in defs else m.group(1), expr)
        expr = re.sub(r"\b(WH_\w+)\b", lambda m: str(names[m.group(1)]), expr)
        return eval(expr.replace("0xffffffffu", "0xffffffff"), {})

    cli = open(os.path.join(src, "reducer/cli/cli.c")).read()
    cmds = {m.group(1): bits[m.group(2)] for m in re.finditer(r'\{"([a-z-]+)", wh_cmd_[\w]+, (WH_CMD_\w+),', cli)}
    out = []
    n_rows = 0
    for m in re.finditer(r'\{"([a-z0-9-]+)", (\w+), ([^,]+), (true|false), ([^,}]+)(?:, ([^}]+))?\}', c):
        n_rows += 1
        if not m.group(6):
            continue
        marks = value(m.group(6), marks_of)
        if not marks & (2 | 4 | 8):
            continue
        mask = value(m.group(5), bits)
        letter = m.group(3).strip()[1] if m.group(4) == "true" else None
        for cmd, bit in cmds.items():
            if mask & bit:
                out.append((cmd, m.group(1), letter, marks, m.group(2)))
    return out, n_rows, cmds


def digest(root):
    """{relative path: sha256} of every file under root (links by their target's bytes)."""
    h = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            try:
                h[os.path.relpath(p, root)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
            except OSError:
                h[os.path.relpath(p, root)] = "unreadable"
    return h


# Per command: the arguments that pass its own rules, with OUT standing for the path that -o
# (where the command takes one) gets when -o is not the option tried, and the arguments that
# go last (--check). The check fails on every candidate, so a search is short.
ARGS = {
    "extract": (["M", "--inputs", "x", "--outputs", "y", "-o", "OUT"], []),
    "sanitize": (["M", "-o", "OUT"], []),
    "run": (["M", "--precision", "fp16", "--compare", "fp32"], []),
    "reduce": (["M", "-o", "OUT", "--artifacts-dir", "ART"], ["--check", "false"]),
    "precision": (["M", "--precision", "fp16", "-o", "OUT"], ["--check", "sh", "-c", 'grep -q \'"m1"\' "$1"', "sh", "{precisions}"]),
    "build": (["M", "--until", "1", "--artifacts-dir", "ART"], ["--check", "sh", "-c", "exit 0", "sh", "{tactics}"]),
    "triage": (["M", "--no-graphviz", "--artifacts-dir", "ART"], ["--check", "false"]),
    "repeat": (["--until", "1", "--artifacts-dir", "ART"], ["--check", "false"]),
    "convert": (["M", "--precision", "fp16", "-o", "OUT"], []),
}
# options whose value matters to the command beyond being a path: a calibration cache is
# written when int8 layers are calibrated (by the built-in check for reduce), a timing cache
# goes with --save-tactics
EXTRA = {("run", "timing-cache"): ["--save-tactics", "out/t.json"]}
# the saving options of precision say how --save-model's weights are stored
for name in ("external-data-path", "save-external-data", "external-data-size-threshold"):
    EXTRA[("precision", name)] = ["--save-model", "out/typed.onnx"]


def args_for(cmd, name):
    pre, post = list(ARGS[cmd][0]), list(ARGS[cmd][1])
    if name == "calibration-cache":
        if "--precision" in pre:
            pre[pre.index("--precision") + 1] = "int8"
        else:
            pre += ["--precision", "int8"]
        if cmd == "reduce":
            post = []
    return pre, post
READS_NO_MODEL = {"repeat"}  # runs a check, reads no model: nothing of the user's to aim at


def main(argv):
    src, whittle, work = argv[1], argv[2], argv[3]
    rows, n_rows, cmds = table(src)
    fails = 0

    def say(good, label, detail=""):
        nonlocal fails
        print(("ok   " if good else "FAIL ") + label + ("" if good else ": " + detail))
        fails += 0 if good else 1

    if n_rows < 60 or len(rows) < 15:
        say(False, "option table", "parsed %d rows, %d write options: the pattern no longer matches options.c" % (n_rows, len(rows)))
        return 1
    pristine = os.path.join(work, "pristine")
    shutil.rmtree(pristine, ignore_errors=True)
    subprocess.run(["/usr/bin/python3", os.path.join(src, "scripts/gen-overwrite.py"), pristine], check=True)
    os.symlink("model.onnx", os.path.join(pristine, "orig", "link.onnx"))
    case = os.path.join(work, "case")
    n = 0
    for cmd, name, letter, marks, has_arg in rows:
        if cmd not in ARGS:
            say(False, "%s --%s" % (cmd, name), "no arguments for this command in tests/overwrite.py's ARGS")
            continue
        opt = "-" + letter if letter else "--" + name
        pre, post = args_for(cmd, name)
        takes_o = "-o" in pre

        def build(value, out_dir="out"):
            """The argument list with opt=value; the other outputs go to fresh names in out_dir."""
            args = []
            for a in pre:
                args.append({"M": "orig/model.onnx", "OUT": out_dir + "/o-%d.onnx" % n, "ART": out_dir + "/art-%d" % n}.get(a, a))
            # the option tried replaces the same option in the base arguments
            for i in range(len(args) - 1):
                if args[i] == opt or args[i] == "--" + name:
                    del args[i:i + 2]
                    break
            args += EXTRA.get((cmd, name), [])
            if has_arg == "optional_argument":
                args.append("%s=%s" % (opt, value))
            else:
                args += [opt, value]
            return [whittle, cmd] + args + post

        def attempt(label, args, must_refuse, value):
            nonlocal n
            n += 1
            shutil.rmtree(case, ignore_errors=True)
            shutil.copytree(pristine, case, symlinks=True)
            before = digest(case)
            try:
                r = subprocess.run(args, cwd=case, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
                rc, err = r.returncode, r.stderr
            except subprocess.TimeoutExpired:
                rc, err = -1, "timed out"
            after = digest(case)
            changed = sorted(p for p in before if after.get(p) != before[p])
            lines = [l for l in err.splitlines() if l.strip()]
            shown = " ".join(a if a != whittle else "whittle" for a in args)
            if changed:
                say(False, label, "%s changed %s (exit %d)" % (shown, ", ".join(changed), rc))
            elif must_refuse and (rc not in (2, 3) or len(lines) != 1 or not lines[0].startswith("whittle: ") or
                                  value.lstrip("./") not in lines[0]):
                say(False, label, "%s: exit %d, stderr %r (want exit 2 or 3 and one line naming %s)" % (shown, rc, err[-400:], value))
            elif must_refuse is False and rc not in (0, 1):
                say(False, label, "%s: exit %d, stderr %r (want it to run: exit 0 or 1)" % (shown, rc, err[-400:]))
            else:
                say(True, label + (" (refused: exit %d)" % rc if must_refuse else " (exit %d)" % rc))

        if marks & 8:
            # a weights file name next to each saved model: the input's weights by name
            place = ["-o", "orig/new.onnx"] if takes_o else ["--artifacts-dir", "orig"]
            for w in ("w.bin", "w2.bin"):
                args = build(w)
                args = args[:2] + [a for a in args[2:]]
                # aim the saved model (or the artifacts folder) at the original's folder
                for i, a in enumerate(args):
                    if a == place[0]:
                        args[i + 1] = place[1]
                attempt("%s %s=%s next to the original" % (cmd, opt, w), args, True, w)
            # an explicit name that another model's file has: kept, the save refused
            attempt("%s %s=w.bin into a folder holding another model's w.bin" % (cmd, opt), build("w.bin"), None, "w.bin")
            continue
        if cmd not in READS_NO_MODEL:
            for target in ("orig/model.onnx", "./orig/link.onnx", "orig/w.bin", "orig/w2.bin"):
                attempt("%s %s %s" % (cmd, opt, target), build(target), True, target)
        fresh = "out/fresh-%s" % name
        attempt("%s %s into a folder holding another model's w.bin" % (cmd, opt), build(fresh), False, fresh)
    print("overwrite: %d failures" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
