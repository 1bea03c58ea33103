#!/usr/bin/env python3
"""instruction_mix.py: what the instructions a generated solver executes per call are, by kind and by
function (docs/status.md, issue 28: "Instructions per operation").

    valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \\
        --callgrind-out-file=CG ./driver calls N
    objdump -d --no-show-raw-insn ./driver > DRIVER.s
    python3 bench/profile/instruction_mix.py --callgrind CG --objdump DRIVER.s --calls N \\
        --functions REGEX [--json OUT]

scripts/profile.sh --mix runs all of this on its driver. Callgrind counts every executed instruction
at its address; objdump gives the instruction at each address. The executions of the instructions of
the functions whose (mangled) names match REGEX are divided by N and sorted into kinds:

  arithmetic        add, sub, mul, div, sqrt, neg (xor/and of a sign) on scalars or vectors, with
                    "(load folded)" where an operand is read from memory in the same instruction
  register copy     a move between two registers (SSE2's two-operand form copies an operand that
                    is still live before an instruction overwrites it)
  spill load/store  a move from or to the stack (%rsp, %rbp): the compiler's spill slots and, where
                    the work struct or the lanes' arrays sit in the frame, those
  constant load     a load of a constant (%rip-relative)
  memory load/store any other load or store: the inputs, the outputs, the work struct by pointer,
                    the lanes' splat table
  shuffle           unpck*, movhpd/movlpd, shufpd: building or splitting vectors
  compare/branch    the pivot and finiteness tests
  other             calls, returns, integer work

and reported in total, per kind and per function group (the numbered parts NAME_partK and lane
blocks NAME_lanesK taken together). Deterministic: the counts do not depend on the machine's load.
"""
import argparse
import collections
import json
import re
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from profile_analyze import memory_accesses  # noqa: E402  (scripts/, beside profile.sh)

ARITH = re.compile(r"^v?(add|sub|mul|div|sqrt|min|max|fmadd\w*|fmsub\w*|fnmadd\w*|fnmsub\w*)(s|p)(d|s)$")
SIGN = re.compile(r"^v?(xor|and|andn)p(d|s)$")
MOVE = re.compile(r"^v?(movsd|movss|movapd|movaps|movupd|movups|movq|movd|movdqa|movdqu)$")
SHUFFLE = re.compile(r"^v?(unpck\w+|movhpd|movlpd|movhps|movlps|shufpd|shufps|movddup|vbroadcast\w*|vperm\w+|vinsert\w+|vextract\w+)$")
BRANCH = re.compile(r"^(v?u?comis[ds]|j\w+|cmp\w*|test\w*|set\w+)$")


def read_objdump(path):
    """{address: (mnemonic, operands, function)} of an objdump -d listing."""
    ins, fn = {}, None
    for line in open(path):
        m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if m:
            fn = m.group(2)
            continue
        m = re.match(r"^\s+([0-9a-f]+):\t(\S+)\s*(.*)$", line.rstrip("\n"))
        if m:
            ins[int(m.group(1), 16)] = (m.group(2), m.group(3).split("#")[0].strip(), fn)
    return ins


def read_callgrind(path):
    """{object: {address: executions}} of a callgrind output written with --dump-instr=yes
    --compress-pos=no --compress-strings=no (the line after calls= is a call's inclusive cost)."""
    cost = collections.defaultdict(collections.Counter)
    ob, skip = "", False
    for line in open(path):
        if line.startswith("ob="):
            ob = line[3:].strip()
        elif line.startswith("calls="):
            skip = True
        elif line.startswith("0x"):
            if skip:
                skip = False
                continue
            f = line.split()
            cost[ob][int(f[0], 16)] += int(f[-1])
    return cost


def kind(mnem, ops):
    """The kind of one instruction (see the module's docstring); its memory operand classified as
    the static counts of scripts/profile.sh classify it (profile_analyze.memory_accesses)."""
    mems = memory_accesses(mnem, ops)
    if ARITH.match(mnem) or SIGN.match(mnem):
        return "arithmetic" + (" (load folded)" if mems else "")
    if SHUFFLE.match(mnem):
        return "shuffle"
    if MOVE.match(mnem):
        if not mems:
            return "register copy"
        where, store = mems[0]
        return {"const": "constant", "stack": "spill", "other": "memory"}[where] + (" store" if store else " load")
    if BRANCH.match(mnem):
        return "compare/branch"
    return "other"


def demangle(names):
    """{mangled: demangled} by c++filt (binutils, beside objdump); names kept where it is missing."""
    names = sorted(set(names))
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout.split("\n")
        return dict(zip(names, out))
    except (OSError, subprocess.CalledProcessError):
        return {n: n for n in names}


def group(fn):
    """A function's group: its name without arguments, clones and template arguments, the numbered
    parts (NAME_partK) and lane blocks (NAME_lanesK) of an entry point together."""
    g = re.sub(r"\.(constprop|isra|part|cold)\.\d+", "", fn or "?")
    g = re.sub(r"\s*\[clone [^]]*\]", "", g)
    g = re.sub(r"^.*?(\w+(?:::\w+)*)(<[^()]*>)?\(.*$", r"\1", g)
    g = re.sub(r"^\(anonymous namespace\)::", "", g)
    return re.sub(r"(_part|_lanes)\d+$", r"\1K", g)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--callgrind", required=True, help="callgrind output (--dump-instr=yes --compress-pos=no --compress-strings=no)")
    ap.add_argument("--objdump", required=True, help="objdump -d --no-show-raw-insn of the profiled executable")
    ap.add_argument("--calls", type=int, required=True, help="calls of the entry point in the profiled run")
    ap.add_argument("--functions", required=True, help="regular expression of the (mangled) functions to count")
    ap.add_argument("--json", help="write the counts per call here")
    a = ap.parse_args()
    ins = read_objdump(a.objdump)
    cost = read_callgrind(a.callgrind)
    want = re.compile(a.functions)
    # per object of the run (the driver, libc, libm, ...): its executed instructions in the functions
    # asked for; the addresses of objdump's listing are those of the object that has the most
    matched = {ob: [(ins[addr], v) for addr, v in c.items() if addr in ins and want.search(ins[addr][2] or "")] for ob, c in cost.items()}
    counted = max(matched.values(), key=lambda m: sum(v for _, v in m), default=[])
    if not counted:
        sys.exit(f"instruction_mix: no executed instruction of {a.callgrind} lies in a function matching '{a.functions}' of {a.objdump}")
    by_kind, by_group, by_group_kind = collections.Counter(), collections.Counter(), collections.defaultdict(collections.Counter)
    plain = demangle(i[2] for i, _ in counted)
    for i, v in counted:
        k, g = kind(i[0], i[1]), group(plain[i[2]])
        by_kind[k] += v
        by_group[g] += v
        by_group_kind[g][k] += v
    total = sum(by_kind.values())
    per = lambda v: round(v / a.calls, 1)
    print(f"instructions per call: {per(total):,.1f} ({a.calls} calls)")
    for k, v in by_kind.most_common():
        print(f"  {per(v):>12,.1f}  {100 * v / total:5.1f} %  {k}")
    print("per function group:")
    for g, v in by_group.most_common():
        top = ", ".join(f"{k} {100 * n / v:.0f} %" for k, n in by_group_kind[g].most_common(4))
        print(f"  {per(v):>12,.1f}  {g}  ({top})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"calls": a.calls, "per_call": per(total), "kinds": {k: per(v) for k, v in by_kind.most_common()},
                       "groups": {g: {"per_call": per(v), "kinds": {k: per(n) for k, n in by_group_kind[g].most_common()}}
                                  for g, v in by_group.most_common()}}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
