#!/usr/bin/python3
"""Compares the option table (reducer/cli/options.c) with `whittle COMMAND --help` and the
user guides (docs/*.md), for tests/e2e-docs-options.sh.

    docs-options.py SRC WHITTLE

Checks, per command of reducer/cli/cli.c's table:
  - its --help names every option the table gives it;
  - its --help names no option that no command takes;
  - its guide pages (docs/README.md: the guides listing the command, a page naming
    `COMMAND --option` for that option, and the reference pages) mention each of its
    options, as --name or, for an option with a letter, -x;
and for the docs: every --name in docs/*.md is an option of some command (or a flag of
another tool, listed in FOREIGN), and every option of the table is in some page.
Prints one line per problem and "docs-options: N problems"; exits 1 when there are any.
"""
import glob
import os
import re
import subprocess
import sys

# flags of other tools that the docs and the help quote (Polygraphy, trtexec, Slurm,
# ONNX Runtime's runner and whittle's scripts), and --check (the check command: the rest of
# the line, parsed before the table)
FOREIGN = {
    # polygraphy
    "art-dir", "bf16", "check-inference", "cleanup", "fail-returncode", "force-fallback-shape-inference",
    "fp16", "fp-to-fp16", "fp8", "hide-fail-output", "int8", "iter-artifact", "load-debug-replay", "load-outputs",
    "load-timing-cache", "mark", "model-input-shapes", "onnx-outputs", "onnxrt", "override-input-shapes",
    "precision-constraints", "save-debug-replay", "save-timing-cache", "show-output", "tf32", "trt",
    "trt-outputs",
    # trtexec (its camelCase flags are cut at the capital: --dumpProfile -> dump)
    "onnx", "dump", "export", "load", "layer", "strongly", "accuracy", "best", "duration", "ref", "shapes", "warm",
    # ModelOpt AutoCast (its snake_case flags are cut at the underscore: --nodes_to_exclude -> nodes)
    "nodes", "low",
    # slurm
    "exclusive", "gres", "job-name", "parsable", "wait", "cpus",
    # scripts/ort-run.js, scripts/gen-decoder.py, scripts/bench-*.sh
    "all", "layers", "hidden", "heads", "ffn", "seq", "vocab", "external-data", "dtype", "overflow-layer", "limit", "rounds", "keep",
    # tests/tool-search-bench (bench-reduce.sh)
    "random",
    # architecture.md's placeholder in the message shape `--opt '<value>'`
    "opt",
}
SPECIAL = {"check"}
LONG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")


def table(src):
    h = open(os.path.join(src, "reducer/cli/options.h")).read()
    bits = {m.group(1): 1 << int(m.group(2)) for m in re.finditer(r"(WH_CMD_\w+) = 1u << (\d+)", h)}
    c = open(os.path.join(src, "reducer/cli/options.c")).read()
    defs = dict(re.findall(r"#define (\w+) (.*)", c))

    def mask(expr):
        for _ in range(8):
            expr = re.sub(r"\b([A-Z_]+)\b", lambda m: "(%s)" % defs[m.group(1)] if m.group(1) in defs else m.group(1), expr)
        expr = re.sub(r"\b(WH_CMD_\w+)\b", lambda m: str(bits[m.group(1)]), expr)
        return eval(expr.replace("0xffffffffu", "0xffffffff"), {})

    rows = []
    # a row: name, has_arg, code, letter, commands[, path marks (enum wh_cli_path)]
    for m in re.finditer(r'\{"([a-z0-9-]+)", \w+, ([^,]+), (true|false), ([^,}]+)(?:, [^}]+)?\}', c):
        letter = m.group(2).strip()[1] if m.group(3) == "true" else None
        rows.append((m.group(1), letter, mask(m.group(4))))
    cli = open(os.path.join(src, "reducer/cli/cli.c")).read()
    cmds = {m.group(1): bits[m.group(2)] for m in re.finditer(r'\{"([a-z-]+)", wh_cmd_[\w]+, (WH_CMD_\w+),', cli)}
    per_cmd = {cmd: {name: letter for name, letter, msk in rows if msk & bit} for cmd, bit in cmds.items()}
    return per_cmd, {name for name, _, _ in rows}


def pages_of(src, cmds):
    """command -> the docs pages that document its options (without polygraphy.md, which
    maps Polygraphy's flags), and option pages named as `COMMAND --option`."""
    readme = open(os.path.join(src, "docs/README.md")).read()
    guides = {c: set() for c in cmds}
    named = {}
    reference = set()
    section = None
    for line in readme.splitlines():
        if line.startswith("## "):
            section = line[3:]
        m = re.match(r"\| \[([\w.-]+)\]\(\1\) \| ([^|]+) \|", line)
        if not m or m.group(1) == "polygraphy.md":
            continue
        if section == "Reference":
            reference.add(m.group(1))
            continue
        for c in re.findall(r"`([a-z-]+)`", m.group(2)):
            if c in guides:
                guides[c].add(m.group(1))
        for c, o in re.findall(r"`([a-z-]+) --([a-z0-9-]+)`", m.group(2)):
            named.setdefault((c, o), set()).add(m.group(1))
    return guides, named, reference


def mentions(path):
    text = open(path).read()
    return set(LONG.findall(text)), set(re.findall(r"(?<![\w-])-([a-zA-Z])\b", text))


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    src, whittle = argv[1], argv[2]
    per_cmd, every = table(src)
    problems = []
    docs = {os.path.basename(p): mentions(p) for p in sorted(glob.glob(os.path.join(src, "docs/*.md")))}
    guides, named, reference = pages_of(src, per_cmd)
    for cmd, opts in per_cmd.items():
        out = subprocess.run([whittle, cmd, "--help"], capture_output=True, text=True)
        if out.returncode != 0:
            problems.append("whittle %s --help: exit %d" % (cmd, out.returncode))
            continue
        helped = set(LONG.findall(out.stdout))
        for o in sorted(set(opts) - helped - {"help"}):
            problems.append("whittle %s --help: does not name --%s, which %s takes" % (cmd, o, cmd))
        for o in sorted(helped - every - SPECIAL - FOREIGN):
            problems.append("whittle %s --help: names --%s, which no command takes" % (cmd, o))
        if not guides[cmd]:
            problems.append("docs/README.md: no guide lists `%s`" % cmd)
        for o, letter in sorted(opts.items()):
            if o == "help":
                continue
            pages = guides[cmd] | reference | named.get((cmd, o), set())
            if not any(o in docs[p][0] or (letter and letter in docs[p][1]) for p in pages if p in docs):
                problems.append("docs: %s --%s is in none of %s" % (cmd, o, ", ".join(sorted(pages))))
    for page, (longs, _) in docs.items():
        for o in sorted(longs - every - SPECIAL - FOREIGN):
            problems.append("docs/%s: names --%s, which no command takes" % (page, o))
    for o in sorted(every - set().union(*(l for l, _ in docs.values())) - {"help"}):
        problems.append("docs: no page names --%s" % o)
    for p in problems:
        print(p)
    print("docs-options: %d problems" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
