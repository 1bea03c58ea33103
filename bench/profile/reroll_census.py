#!/usr/bin/env python3
"""reroll_census.py: how much of a generated solver a per-shape kernel could share
(docs/large-robots.md, "Per-shape kernels: what the programs offer").

    python3 bench/profile/reroll_census.py DIR/NAME.cpp [--windows 16,64,256] [--normalize]

A kernel run over a table of constants can replace a run of W consecutive statements wherever the
same run, up to the values of its constants, recurs: the same operations in the same order, every
operand either a constant (its value goes to the table), a program input (its index goes to the
table), a value computed earlier in the same run at the same offset, or a value from before the
run (an argument: the call site must pass it through memory). This script reads the statements of
the double path of NAME.cpp (every `tN = ...;` of the parts, or of _impl), canonicalizes every
window of W statements under that rule, and reports for each W:

  - covered: statements that lie in at least one window whose canonical form occurs at least
    twice (at least 8 times), as a fraction of all statements: an upper bound of what kernels of
    that length could share;
  - shapes: distinct canonical forms among the repeated windows;
  - args/stmt: arguments per statement of the repeated windows (the loads and stores a call costs
    per statement it replaces);
  - tiling: a greedy left-to-right cover in which every window that recurs becomes a call of its
    kernel: kernels, calls, and the statements left to emit (each kernel once, plus the statements
    no window covers) as a fraction of all: the code a kernel form of that W would keep.

--normalize also treats a - b as a + b and the operands of + and * as unordered: what a kernel
could share if it carried signs in its constant table and the emitter put operands in a canonical
order (neither is done today; the IR folds a sign into the operation).
"""
import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from generated_names import unwindow  # noqa: E402

STMT = re.compile(r"^\s*(?:const T |w\.|const nelu::SinCos<T> )?(t\d+|sc\d+)\s*=\s*([^;]*);")
TOKEN = re.compile(r"w\.t\d+|t\d+|sc\d+\.[sc]|T\([^)]*\)|q\[\d+\]|qd\[\d+\]|in\[\d+\]|nelu::sincos|std::\w+|[-+*/]")


KEPT_STMT = re.compile(r"^(\s*)w\.kept\[(\d+)\] = (.*;)\s*// (t\d+)")
KEPT = re.compile(r"\bw\.kept\[(\d+)\]")


def statements(path):
    """[(name, [tokens])] of the double path in emission order (the float path repeats it)."""
    out, seen = [], set()
    kept = {}  # element of the work struct's array `kept` -> its node, from the comment of its statement
    for line in unwindow(open(path).read()).splitlines(keepends=True):
        m = KEPT_STMT.match(line)
        if m:  # `w.kept[k] = ...;  // tN`: the statement of node tN
            kept[m.group(2)] = m.group(4)
            line = f"{m.group(1)}w.{m.group(4)} = {m.group(3)}"
        line = KEPT.sub(lambda r: "w." + kept.get(r.group(1), "kept" + r.group(1)), line)
        m = STMT.match(line)
        if not m:
            continue
        name = m.group(1)
        if name in seen:  # a second entry point (float, _ws) repeats the statements: stop
            break
        seen.add(name)
        out.append((name, TOKEN.findall(m.group(2).split("//")[0])))
    return out


def operand_kind(tok):
    if tok.startswith("T("):
        return "C", None
    if tok[0] in "qi":
        return "I", None
    if tok[0] in "tws":
        return "V", tok.replace("w.", "").split(".")[0]
    return None, tok


def encode(stmts, normalize):
    """Per statement: its operator tokens, and per operand (kind, defining position or None)."""
    pos = {}
    enc = []
    for i, (name, toks) in enumerate(stmts):
        ops, args = [], []
        for t in toks:
            kind, ref = operand_kind(t)
            if kind is None:
                ops.append("+" if normalize and ref == "-" else ref)
            else:
                args.append((kind, pos.get(ref) if kind == "V" else None))
        pos[name] = i
        enc.append((tuple(ops), args))
    return enc


def census(enc, W, normalize):
    n = len(enc)
    counts = collections.Counter()
    keys = []
    args_of = []
    for s in range(n - W + 1):
        key, nargs = [], 0
        for k in range(W):
            ops, args = enc[s + k]
            parts = []
            for kind, d in args:
                if kind == "V" and d is not None and d >= s:
                    parts.append(("L", s + k - d))
                elif kind == "V":
                    parts.append(("A",))
                    nargs += 1
                else:
                    parts.append((kind,))
            if normalize and ops in (("+",), ("*",)):
                parts.sort()
            key.append((ops, tuple(parts)))
        key = hash(tuple(key))
        keys.append(key)
        args_of.append(nargs)
        counts[key] += 1
    res = {}
    for least in (2, 8):
        cov = bytearray(n)
        shapes, arg_total, win_total = set(), 0, 0
        for s, key in enumerate(keys):
            if counts[key] >= least:
                cov[s:s + W] = b"\x01" * W
                shapes.add(key)
                arg_total += args_of[s]
                win_total += 1
        res[least] = (sum(cov), len(shapes), arg_total / (win_total * W) if win_total else 0.0)
    # greedy tiling, left to right: a window that recurs becomes a call of its kernel (emitted once)
    kernels, calls, plain, s = set(), 0, 0, 0
    while s <= n - W:
        if counts[keys[s]] >= 2:
            kernels.add(keys[s])
            calls += 1
            s += W
        else:
            plain += 1
            s += 1
    plain += n - s
    res["tiling"] = (len(kernels), calls, (len(kernels) * W + plain) / n)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cpp")
    ap.add_argument("--windows", default="16,64,256")
    ap.add_argument("--normalize", action="store_true")
    a = ap.parse_args()
    stmts = statements(a.cpp)
    if not stmts:
        sys.exit(f"reroll_census: no statements found in {a.cpp}")
    enc = encode(stmts, a.normalize)
    n = len(enc)
    print(f"{a.cpp}: {n} statements{' (normalized signs and operand order)' if a.normalize else ''}")
    print(f"{'W':>5} {'covered (>=2)':>14} {'shapes':>7} {'args/stmt':>9} {'covered (>=8)':>14} {'shapes':>7} {'args/stmt':>9}"
          f" {'kernels':>8} {'calls':>6} {'code kept':>9}")
    for W in (int(w) for w in a.windows.split(",")):
        if W > n:
            continue
        r = census(enc, W, a.normalize)
        print(f"{W:>5} {100 * r[2][0] / n:>13.0f}% {r[2][1]:>7} {r[2][2]:>9.2f} "
              f"{100 * r[8][0] / n:>13.0f}% {r[8][1]:>7} {r[8][2]:>9.2f}"
              f" {r['tiling'][0]:>8} {r['tiling'][1]:>6} {100 * r['tiling'][2]:>8.0f}%")


if __name__ == "__main__":
    main()
