#!/usr/bin/env python3
"""profile_analyze.py: the report of scripts/profile.sh (see there). Reads, for one build of one
solver, the two cachegrind outputs (N1 and N2 calls), `objdump -d`, `nm -S`, the -fstack-usage
file and the manifest, and prints a table; appends one JSON record to --json.

Per call, from cachegrind: (total of the N2 run - total of the N1 run) / (N2 - N1), per event and
per function, so the start-up of the process and the first (cold) calls cancel out.
From objdump (static counts; the solvers are straight-line, so static = executed per call unless
a status return is taken): instructions, loads and stores addressed off %rsp/%rbp (the stack:
register spills, and the work struct where it lives in the caller's frame), loads of constants
(%rip-relative), other memory accesses (inputs, outputs, the work struct through its pointer)."""
import argparse
import json
import re
import sys
from collections import defaultdict


def cachegrind(path):
    """{function: {event: count}} and the event names of one cachegrind.out file."""
    events, per_fn, fn, fl = [], defaultdict(lambda: defaultdict(int)), None, None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("fl="):
                fl = line[3:].strip()
            elif line.startswith("fn="):
                fn = line[3:].strip()
            elif line[:1].isdigit() and fn is not None:
                nums = line.split()[1:]
                d = per_fn[(fl, fn)]
                for e, v in zip(events, nums):
                    d[e] += int(v)
    return events, per_fn


def short_name(sig):
    """'int (anonymous namespace)::X_part0<double>(...) [clone .constprop.0]' -> 'X_part0<double>'."""
    m = re.search(r"(\w+)<(double|float)>\(", sig)
    if m:
        return f"{m.group(1)}<{m.group(2)}>"
    m = re.search(r"(\w+)\(.*\[with T = (double|float)\]", sig)
    if m:
        return f"{m.group(1)}<{m.group(2)}>"
    m = re.search(r"(\w+)\(", sig)
    if m:
        return m.group(1)
    return sig.strip()


def objdump_counts(path):
    """{function: counts} from `objdump -d --no-show-raw-insn -C` output."""
    out, cur = {}, None
    head = re.compile(r"^[0-9a-f]+ <(.*)>:$")
    for line in open(path):
        m = head.match(line.strip())
        if m:
            cur = short_name(m.group(1))
            out.setdefault(cur, defaultdict(int))
            continue
        if cur is None or "\t" not in line:
            continue
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 2:
            continue
        ins = parts[-1].strip()
        if not ins or ins.startswith("(bad)"):
            continue
        c = out[cur]
        c["instructions"] += 1
        mnem, _, ops = ins.partition(" ")
        ops = ops.split("#")[0].strip()
        if mnem.startswith("call"):
            c["calls"] += 1
        for where, store in memory_accesses(mnem, ops):
            c[f"{where}_{'stores' if store else 'loads'}"] += 1
    return out


def memory_accesses(mnem, ops):
    """[(where, store)] per memory operand of one instruction (AT&T syntax, comment stripped):
    where is "stack" (off %rsp or %rbp), "const" (%rip-relative, read only) or "other"; store when
    it is the destination (the last of two or more operands, not of a compare). Address
    computations (lea), jumps, calls and returns access none. bench/profile/instruction_mix.py
    sorts the executed instructions by the same rule."""
    if "(" not in ops or mnem.startswith(("lea", "nop", "call", "jmp", "j", "ret")):
        return []
    operands = re.findall(r"[^,(]*\([^)]*\)|[^,]+", ops)
    accesses = []
    for i, o in enumerate(operands):
        if "(" not in o:
            continue
        store = i == len(operands) - 1 and len(operands) > 1 and not mnem.startswith(("ucomi", "comi", "cmp", "test"))
        where = "stack" if ("%rsp" in o or "%rbp" in o) else "const" if "%rip" in o else "other"
        accesses.append(("other" if where == "const" and store else where, store))
    return accesses


def stack_usage(path):
    out = {}
    try:
        for line in open(path):
            loc, size, _kind = line.rstrip("\n").rsplit("\t", 2)
            out[short_name(loc.split(":", 3)[3])] = int(size)
    except FileNotFoundError:
        pass
    return out


def nm_sizes(path):
    out = {}
    for line in open(path):
        p = line.split(None, 3)
        if len(p) == 4 and p[2].lower() == "t":
            out[short_name(p[3])] = out.get(short_name(p[3]), 0) + int(p[1], 16)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--cg1", required=True)
    ap.add_argument("--cg2", required=True)
    ap.add_argument("--calls", type=int, nargs=2, required=True)
    ap.add_argument("--objdump", required=True)
    ap.add_argument("--nm", required=True)
    ap.add_argument("--su", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--ns", type=float, default=None)
    ap.add_argument("--status", default="")
    ap.add_argument("--build-seconds", type=float, default=None, help="wall time of the g++ of the solver's object")
    ap.add_argument("--build-cpu-seconds", type=float, default=None, help="its CPU time (user + sys)")
    ap.add_argument("--json", required=True)
    a = ap.parse_args()

    man = json.load(open(a.manifest))
    o = man["ops"]
    ops = o["mul"] + o["add"] + o["div"] + o.get("sqrt", 0)
    src = open(a.source).read()
    work_values = len(re.findall(r"^    T t\d+;$", src, re.M))
    parts = len(re.findall(r"^(?:__attribute__\(\(noinline\)\) )?int \w+_part\d+\(", src, re.M))
    statements = len(re.findall(r"^    (?:const T )?(?:w\.)?t\d+ = ", src, re.M))

    ev1, f1 = cachegrind(a.cg1)
    ev2, f2 = cachegrind(a.cg2)
    dn = a.calls[1] - a.calls[0]
    events = ev2
    total = {e: (sum(d[e] for d in f2.values()) - sum(d[e] for d in f1.values())) / dn for e in events}
    per_fn = {}
    for key in set(f2) | set(f1):
        d = {e: (f2.get(key, {}).get(e, 0) - f1.get(key, {}).get(e, 0)) / dn for e in events}
        if d.get("Ir", 0) >= 1:
            fl, fn = key
            group = short_name(fn) if a.name in fn else ("libm: " + fn if "libm" in fl else fn)
            g = per_fn.setdefault(group, defaultdict(float))
            for e, v in d.items():
                g[e] += v

    dis = objdump_counts(a.objdump)
    su = stack_usage(a.su)
    sizes = nm_sizes(a.nm)
    # the double path NAME calls: not the float entry point NAME_f, nor the entry point with a
    # caller-provided work struct NAME_ws (and its parts NAME_ws_partK), which the driver does not call
    solver_fns = sorted(k for k in sizes if a.name in k and not k.endswith("<float>") and not k.endswith("_f")
                        and not k.startswith(a.name + "_ws") and not k.startswith(a.name + "_f_ws"))

    def s(fn, key):
        return dis.get(fn, {}).get(key, 0)

    static = {k: sum(s(fn, k) for fn in solver_fns) for k in
              ("instructions", "stack_loads", "stack_stores", "const_loads", "other_loads", "other_stores", "calls")}
    rec = {
        "label": a.label, "name": a.name, "ops": ops, "parts": parts, "statements": statements,
        "work_values": work_values, "ns": a.ns, "ops_per_ns": (ops / a.ns) if a.ns else None, "status": a.status,
        "Ir": total.get("Ir"), "I1mr": total.get("I1mr"), "D1mr": total.get("D1mr"), "D1mw": total.get("D1mw"),
        "ILmr": total.get("ILmr"), "DLmr": total.get("DLmr"), "DLmw": total.get("DLmw"),
        "Dr": total.get("Dr"), "Dw": total.get("Dw"),
        "code_bytes": sum(sizes[fn] for fn in solver_fns), "code_bytes_all": sum(sizes.values()),
        "stack_bytes": max([su.get(fn, 0) for fn in solver_fns] + [0]),
        "stack_bytes_sum": sum(su.get(fn, 0) for fn in solver_fns),
        "build_s": a.build_seconds, "build_cpu_s": a.build_cpu_seconds,
        "static": static,
        "functions": {fn: {"bytes": sizes.get(fn, 0), "frame": su.get(fn, 0), **{k: s(fn, k) for k in static}}
                      for fn in solver_fns},
        "per_call_by_function": {k: dict(v) for k, v in per_fn.items()},
    }
    with open(a.json, "a") as f:
        f.write(json.dumps(rec) + "\n")

    w = sys.stdout.write
    w(f"== {a.label}\n")
    w(f"ops {ops}  statements {statements}  parts {max(parts, 1)}  work values {work_values}"
      f"  g++ {a.build_seconds} s (CPU {a.build_cpu_seconds} s)"
      f"  status {a.status}\n")
    if a.ns:
        w(f"time: {a.ns:.1f} ns/call  {ops / a.ns:.2f} ops/ns  (median CPU time, noisy)\n")
    w(f"cachegrind per call (steady state; caches as given to profile.sh, by default I1/D1 32 KiB 8-way,"
      f" LL 8 MiB 16-way, 64 B lines):\n")
    w("  " + "  ".join(f"{e} {total[e]:.1f}" for e in events) + "\n")
    w(f"  instructions per op {total['Ir'] / ops:.2f}; I1 misses per 1000 instructions"
      f" {1000 * total['I1mr'] / total['Ir']:.1f}; D1 misses (r+w) per call {total['D1mr'] + total['D1mw']:.1f}\n")
    w("per function, per call:\n")
    w(f"  {'function':44s} {'Ir':>9s} {'I1mr':>7s} {'D1mr':>7s} {'D1mw':>7s} {'Dr':>8s} {'Dw':>8s}\n")
    for k, v in sorted(per_fn.items(), key=lambda kv: -kv[1]["Ir"])[:12]:
        w(f"  {k[:44]:44s} {v['Ir']:9.0f} {v.get('I1mr', 0):7.1f} {v.get('D1mr', 0):7.1f} {v.get('D1mw', 0):7.1f}"
          f" {v.get('Dr', 0):8.0f} {v.get('Dw', 0):8.0f}\n")
    w("machine code (double path; objdump static counts = per call for straight-line code):\n")
    w(f"  {'function':34s} {'bytes':>7s} {'frame':>6s} {'instr':>7s} {'stk ld':>7s} {'stk st':>7s}"
      f" {'const ld':>8s} {'oth ld':>7s} {'oth st':>7s} {'calls':>5s}\n")
    for fn in solver_fns:
        d = rec["functions"][fn]
        w(f"  {fn[:34]:34s} {d['bytes']:7d} {d['frame']:6d} {d['instructions']:7d} {d['stack_loads']:7d}"
          f" {d['stack_stores']:7d} {d['const_loads']:8d} {d['other_loads']:7d} {d['other_stores']:7d} {d['calls']:5d}\n")
    st = static
    w(f"  {'total':34s} {rec['code_bytes']:7d} {rec['stack_bytes_sum']:6d} {st['instructions']:7d}"
      f" {st['stack_loads']:7d} {st['stack_stores']:7d} {st['const_loads']:8d} {st['other_loads']:7d}"
      f" {st['other_stores']:7d} {st['calls']:5d}\n")


if __name__ == "__main__":
    main()
