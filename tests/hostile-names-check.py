#!/usr/bin/python3
"""Checks what whittle printed or wrote for a model with hostile names (tests/e2e-hostile-names.sh).

    hostile-names-check.py term FILE...   no control character reaches a terminal
    hostile-names-check.py md FILE...     each Markdown file renders with no live HTML and
                                          intact tables

term: the bytes are UTF-8, and hold no C0 control character but newline and tab, no DEL,
no C1 control character (U+0080-U+009F).

md (a small parser of the CommonMark/GFM constructs that matter here, not a renderer):
fenced and indented code blocks are skipped; in every other line the code spans are taken
out (a run of n backticks up to the next run of exactly n, as CommonMark pairs them;
backslash escapes outside spans respected). What remains must hold no HTML tag start
(`<` then a letter, `/`, `!` or `?`) and no "PWN" (every hostile name carries that marker,
so a name outside a code span is caught). A table (a `|` row over a delimiter row) keeps
its column count in every row: cells are split at each `|` not escaped with a backslash,
code spans included (GFM splits cells before it parses spans). The control-character rule
of term holds too.
Exit 1 with one line per problem; 0 when all files pass.
"""
import re
import sys

CTRL = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
TAG = re.compile(r"<[A-Za-z/!?]")
DELIM = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def text_of(path, problems):
    data = open(path, "rb").read()
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append(f"{path}: not UTF-8 at byte {e.start}: {data[max(0, e.start - 20):e.start + 20]!r}")
        s = data.decode("utf-8", "replace")
    for n, line in enumerate(s.split("\n"), 1):
        m = CTRL.search(line)
        if m:
            problems.append(f"{path}:{n}: control character U+{ord(m.group()):04X}: {line[:120]!r}")
    return s


def strip_spans(line):
    out, i = [], 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line) and line[i + 1] in PUNCT:
            out.append(line[i:i + 2])
            i += 2
            continue
        if c == "`":
            j = i
            while j < len(line) and line[j] == "`":
                j += 1
            n = j - i
            k = j
            close = -1
            while k < len(line):
                if line[k] == "`":
                    e = k
                    while e < len(line) and line[e] == "`":
                        e += 1
                    if e - k == n:
                        close = k
                        break
                    k = e
                else:
                    k += 1
            if close >= 0:
                out.append("CODE")
                i = close + n
            else:
                out.append(line[i:j])
                i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def cells(row):
    # GFM's scanner: a `|` right after a backslash is part of the cell, any other splits
    return sum(1 for i, c in enumerate(row) if c == "|" and (i == 0 or row[i - 1] != "\\"))


def check_md(path, problems):
    lines = text_of(path, problems).split("\n")
    fence = None
    prev_blank = True
    in_indented = False
    table = None  # pipes per row of the table being read
    for n, line in enumerate(lines, 1):
        if fence:
            if line.startswith(fence):
                fence = None
            continue
        if line.startswith("```") or line.startswith("~~~"):
            fence = line[:3]
            continue
        if (line.startswith("    ") or line.startswith("\t")) and (prev_blank or in_indented) and table is None:
            in_indented = True
            continue
        in_indented = False
        prev_blank = not line.strip()
        if table is not None:
            if line.startswith("|"):
                if cells(line) != table:
                    problems.append(f"{path}:{n}: table row with {cells(line) - 1} cells, the header has {table - 1}: {line[:160]!r}")
            else:
                table = None
        if table is None and line.startswith("|") and n < len(lines) and DELIM.match(lines[n]):
            table = cells(lines[n])
            if cells(line) != table:
                problems.append(f"{path}:{n}: table header with {cells(line) - 1} cells, the delimiter row has {table - 1}")
        rest = strip_spans(line)
        if TAG.search(rest):
            problems.append(f"{path}:{n}: live HTML outside a code span: {line[:160]!r}")
        if "PWN" in rest:
            problems.append(f"{path}:{n}: a model's name outside a code span: {line[:160]!r}")


def main():
    mode, files = sys.argv[1], sys.argv[2:]
    problems = []
    for f in files:
        if mode == "term":
            text_of(f, problems)
        else:
            check_md(f, problems)
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
