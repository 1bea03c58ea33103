#!/usr/bin/env python3
"""batch.py: the batch forms' benchmark (scripts/batch_bench.sh; issue 21).

For every robot given (fixed base, and floating base), `id` and `fd` (and, for the robots named
in --derivatives, the derivative solvers of bench/specs/id_zero_fx.yaml and fd_zero_fx.yaml):
`nelu compile --batch`, then bench/batch_driver.cpp built with g++ -O2 and each target's flags
(x86-64: SSE2, the default; x86-64-v3: AVX2 and FMA) times, per state at n = 256, the scalar
entry points (NAME, NAME_f), the batch forms (NAME_batch, NAME_f_batch) and the lane program
alone on states already in lanes (a lane-major layout: no transposition). The x86-64-v4 (AVX-512)
build is compiled with -Werror and measured for code size only (this machine, and QEMU's TCG, have
no AVX-512). Code size: bytes of each form's functions (nm -S). The peers' one-state-per-call
rates come from docs/bench.md's latest run (MuJoCo's, and Pinocchio's where that run has them).
Writes one JSON record per (robot, base, problem, target) and prints the Markdown tables for
docs/bench.md.

usage: batch.py --nelu NELU --robots A.urdf,B.urdf --out FILE.json [--derivatives ur5e,panda_gaz2019]
       batch.py --report FILE.json
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from common import ROOT, ZERO_FX_SPECS, arithmetic_ops, key_values, run

TARGETS = {"x86-64": [], "x86-64-v3": ["-march=x86-64-v3"]}


def code_sizes(binary, name):
    """Bytes of the functions of each form in a driver or object: {scalar|batch: {value|derivatives_double|float: bytes}}.
    The batch form: the lane programs, nelu::lanes (transposition, sincos) and the entry points
    NAME_batch..; the scalar form: NAME's functions and nelu::sincos."""
    sizes = {"scalar": {}, "batch": {}}
    for line in run(["nm", "-S", "-C", "--defined-only", binary]).stdout.splitlines():
        parts = line.split(None, 3)
        if len(parts) < 4 or parts[2].lower() not in ("t", "w"):
            continue
        symbol = parts[3]
        if name not in symbol and "nelu::lanes::" not in symbol and "nelu::sincos" not in symbol:
            continue
        part = "batch" if "_lanes" in symbol or "_batch" in symbol or "nelu::lanes::" in symbol else "scalar"
        form = "derivatives" if "_derivatives" in symbol else "value"
        scalar = "float" if re.search(r"float|^" + name + r"(_derivatives)?_f(_batch|_ws|_batch_width)?$", symbol) else "double"
        key = f"{form}_{scalar}"
        sizes[part][key] = sizes[part].get(key, 0) + int(parts[1], 16)
    return sizes


def measure(args, tmp, robot, floating, problem, label, derivatives):
    base = os.path.splitext(os.path.basename(robot))[0]
    name = re.sub(r"\W", "_", f"{base}_{'fb_' if floating else ''}{label}")
    out = os.path.join(tmp, name)
    cmd = [args.nelu, "compile", robot, "--problem", problem, "--batch", "--name", name, "-o", out, "--verify", "4", "--validate", "500"]
    if floating:
        cmd.append("--floating-base")
    if derivatives:
        cmd.append("--derivatives")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:  # e.g. a floating arm on a massless base link: fd is refused (exit 1)
        return [], p.stderr.strip().splitlines()[0] if p.stderr.strip() else f"exit {p.returncode}"
    manifest = json.load(open(os.path.join(out, name + ".json")))
    records = []
    cxx = [args.cxx, "-std=c++17", "-O2", "-I", os.path.join(ROOT, "runtime/include"), "-I", os.path.join(ROOT, "bench"), "-I", out]
    for target, flags in TARGETS.items():
        exe = os.path.join(out, "driver_" + target)
        defs = [f"-DNELU_SOLVER={name}", f'-DNELU_BATCH_SOURCE="{name}_batch.cpp"'] + (["-DNELU_DERIVATIVES"] if derivatives else [])
        run(cxx + flags + defs + [os.path.join(ROOT, "bench/batch_driver.cpp"), os.path.join(out, name + ".cpp"), "-o", exe])
        times = key_values(run([exe]).stdout)
        sizes = code_sizes(exe, name)
        records.append({"robot": base, "floating": floating, "problem": label, "target": target, "derivatives": derivatives,
                        "ops": arithmetic_ops(manifest["ops"]),
                        "times": {k: v[0] for k, v in times.items() if k.endswith("_ns")}, "width": times["width"],
                        "status": times["status"], "code": sizes})
    # AVX-512: compiled (with -Werror) and measured for size only
    obj = os.path.join(out, "batch_x86-64-v4.o")
    run(cxx + ["-march=x86-64-v4", "-Wall", "-Wextra", "-Werror", "-c", os.path.join(out, name + "_batch.cpp"), "-o", obj])
    for r in records:
        r["code"]["batch_avx512"] = code_sizes(obj, name)["batch"]
    return records, None


def peers():
    """Per robot and problem, the peers' ns per call in docs/bench.md's latest run: {(robot, id|fd): {peer: ns}}."""
    text = open(os.path.join(ROOT, "docs/bench.md")).read()
    rates = {}
    for problem, title in (("id", "## Inverse dynamics: median ns per call"), ("fd", "## Forward dynamics: median ns per call")):
        if title not in text:
            continue
        table = [l for l in text.split(title, 1)[1].split("\n## ", 1)[0].splitlines() if l.startswith("|")]
        header = [c.strip() for c in table[0].strip("|").split("|")]
        for line in table[2:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            for h, c in zip(header, cells):
                if (h.startswith("MuJoCo") or h.startswith("Pinocchio")) and re.match(r"^[\d,.]+$", c):
                    rates.setdefault((cells[0], problem), {})[h] = float(c.replace(",", ""))
    return rates


def tables(records):
    """The Markdown tables of the run: time per state per target, and code size."""
    rates = peers()
    def ratio(a, b):
        return f"{a / b:.2f}×" if a and b else "–"
    def ns(x):
        return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"
    def per_s(x):
        return f"{1e9 / x / 1e6:.2f} M" if x else "–"
    lines = []
    for target in TARGETS:
        lines += [f"\n**{target}** (g++ -O2{' -march=' + target if target != 'x86-64' else ''}; lanes: "
                  + ", ".join(sorted({f'{int(r["width"][0])} double, {int(r["width"][1])} float' for r in records if r["target"] == target}))
                  + "). Per state at n = 256, ns; ratios against the scalar double entry point of the same build; states per second "
                  "of the batch forms beside the peers' one state per call (docs/bench.md's main run above):\n",
                  "| robot | problem | ops | scalar double | scalar float | batch double | batch float | lane program double "
                  "| lane program float | batch double / scalar | batch float / scalar | lane program double / scalar "
                  "| lane program float / scalar | batch double states/s | batch float states/s | peers, one state per call |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in records:
            if r["target"] != target:
                continue
            t = r["times"]
            p = "derivatives_" if r["derivatives"] else ""
            robot = r["robot"] + (" (floating)" if r["floating"] else "")
            key = (r["robot"] + ("_floating" if r["floating"] else ""), r["problem"])
            peer = "; ".join(f"{k} {per_s(v)}" for k, v in rates.get(key, {}).items()) if not r["derivatives"] else ""
            s = t[p + "scalar_ns"]
            lines.append(f"| {robot} | {r['problem']}{' derivatives' if r['derivatives'] else ''} | {r['ops']:,} | {ns(s)} | {ns(t[p + 'scalar_f_ns'])} "
                         f"| {ns(t[p + 'batch_ns'])} | {ns(t[p + 'batch_f_ns'])} | {ns(t[p + 'lanes_ns'])} | {ns(t[p + 'lanes_f_ns'])} "
                         f"| {ratio(s, t[p + 'batch_ns'])} | {ratio(s, t[p + 'batch_f_ns'])} | {ratio(s, t[p + 'lanes_ns'])} "
                         f"| {ratio(s, t[p + 'lanes_f_ns'])} | {per_s(t[p + 'batch_ns'])} | {per_s(t[p + 'batch_f_ns'])} | {peer or '–'} |")
    lines += ["\n**Code size** (bytes of each form's functions, g++ -O2: the batch form's lane program, its transposition and "
              "nelu::lanes::sincos; the scalar form's function and nelu::sincos; x86-64-v4 compiled with -Werror, not run):\n",
              "| robot | problem | scalar double | scalar float | batch double x86-64 | batch float x86-64 | batch double x86-64-v3 "
              "| batch float x86-64-v3 | batch double x86-64-v4 | batch float x86-64-v4 |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    by_key = {}
    for r in records:
        by_key.setdefault((r["robot"], r["floating"], r["problem"], r["derivatives"]), {})[r["target"]] = r
    for (robot, floating, problem, deriv), rs in by_key.items():
        form = "derivatives" if deriv else "value"
        get = lambda target, part, scalar: rs[target]["code"][part].get(f"{form}_{scalar}", 0) if target in rs else 0
        v4 = rs["x86-64"]["code"]["batch_avx512"]
        lines.append(f"| {robot}{' (floating)' if floating else ''} | {problem}{' derivatives' if deriv else ''} "
                     f"| {get('x86-64', 'scalar', 'double'):,} | {get('x86-64', 'scalar', 'float'):,} | {get('x86-64', 'batch', 'double'):,} "
                     f"| {get('x86-64', 'batch', 'float'):,} | {get('x86-64-v3', 'batch', 'double'):,} | {get('x86-64-v3', 'batch', 'float'):,} "
                     f"| {v4.get(form + '_double', 0):,} | {v4.get(form + '_float', 0):,} |")
    return "\n".join(lines)


def ratios(records, target, derivatives, form):
    """Scalar double time / form's time per state, over the records of one target."""
    p = "derivatives_" if derivatives else ""
    return [r["times"][p + "scalar_ns"] / r["times"][p + form] for r in records if r["target"] == target and r["derivatives"] == derivatives]


def section(data):
    """docs/bench.md "Batches of states": what was run, the targets of issue 21, and the tables."""
    records = data["records"]
    def span(xs):
        return f"{min(xs):.2f}–{max(xs):.2f}×"
    def met(xs, need):
        return f"{sum(x >= need for x in xs)} of {len(xs)}"
    def share(derivatives, suffix):
        p = "derivatives_" if derivatives else ""
        xs = sorted(1 - r["times"][p + "lanes" + suffix + "_ns"] / r["times"][p + "batch" + suffix + "_ns"]
                    for r in records if r["target"] == "x86-64-v3" and r["derivatives"] == derivatives)
        return f"{xs[len(xs) // 2] * 100:.0f} %"
    L = ["## Batches of states", "",
         "Generated by `bash scripts/batch_bench.sh` (issue 21; `bench/batch.py`, `bench/batch_driver.cpp`, records in "
         "`docs/bench/batch.json`), a run of its own: every robot of `robots/` and `../shared/robots`, fixed and floating "
         "base, `id` and `fd` (a floating arm on a massless base link is refused `fd`: " +
         ", ".join(sorted({x.split(':')[0] for x in data.get("skipped", [])})) + "), and the derivative solvers of "
         "`bench/specs/id_zero_fx.yaml` and `fd_zero_fx.yaml` (columns q, qd and tau or qdd) of three shipped robots. "
         "`nelu compile --batch`, then one driver per solver and target built with g++ 12 -O2 times, in one process, "
         "the scalar entry points on 256 random states in turn and the batch forms on the same 256 states in one call: "
         "medians of 7 repetitions of the CPU time per state (at least 0.1 s each), on the shared 2-core machine "
         "(AMD EPYC, AVX2 and FMA, no AVX-512). \"Lane program\" is the batch form's program alone on the same states "
         "already in lanes (a lane-major layout: no transposition): what the state-major layout costs." +
         (f" The derivative rows were timed again in a run of their own ({data['derivatives_run']}, "
          "`NELU_BATCH_ONLY_DERIVATIVES=1`) after the derivative programs became the structured ones (issue 20); "
          "each row's ratios are of times measured in one driver." if data.get("derivatives_run") else ""), "",
         "### Targets (issue 21)", "",
         "| target | rows | batch form: range | met | lane program alone: range | met |",
         "|---|---|---:|---:|---:|---:|"]
    for derivatives in (False, True):
        what = "derivatives, " if derivatives else ""
        for form, need, label in (("batch_ns", 3, "double ≥ 3×"), ("batch_f_ns", 6, "float ≥ 6×")):
            b = ratios(records, "x86-64-v3", derivatives, form)
            l = ratios(records, "x86-64-v3", derivatives, form.replace("batch", "lanes"))
            L.append(f"| x86-64-v3 (AVX2), {what}{label} scalar double | {len(b)} | {span(b)} | {met(b, need)} | {span(l)} | {met(l, need)} |")
    L.append("| x86-64-v4 (AVX-512), double ≥ 5×, float ≥ 10× | – | not measured: no AVX-512 here, and QEMU 7.2's TCG "
             "raises an illegal instruction on the first zmm instruction (`qemu-x86_64 -cpu max`); the batch forms compile "
             "with `-march=x86-64-v4 -Wall -Wextra -Werror` (code size below) | – | – | – |")
    b = ratios(records, "x86-64", False, "batch_ns")
    f = ratios(records, "x86-64", False, "batch_f_ns")
    id_lanes = ratios([r for r in records if r["problem"] == "id"], "x86-64-v3", False, "lanes_ns")
    arms = [r for r in records if r["robot"] in ("ur5e", "panda_gaz2019") and not r["floating"] and not r["derivatives"] and r["target"] == "x86-64-v3"]
    def rate(rs, form):
        xs = [1e3 / r["times"][form] for r in rs]
        return f"{min(xs):.0f}–{max(xs):.0f}"
    mujoco_rates = [1e3 / v for (robot, _), peer in peers().items() if robot in ("ur5e", "panda_gaz2019") for k, v in peer.items() if k.startswith("MuJoCo")]
    mujoco = f"{min(mujoco_rates):.2f}–{max(mujoco_rates):.2f}" if mujoco_rates else "–"
    L += ["", f"Without `-march` (SSE2: 2 double lanes, 4 float) the batch forms are {span(b)} (double) and {span(f)} (float) "
          "per state against the scalar double function; there is no target there.", "",
          "Where the rows fall short, measured: (1) the transposition of state-major rows into lanes and back: the lane "
          f"program alone is faster than the batch form by a median {share(False, '')} in double and {share(False, '_f')} in "
          f"float ({share(True, '')} and {share(True, '_f')} for the derivatives), most on inverse dynamics, whose "
          "inputs (qdd and every link's wrench) are many and whose program is short; (2) the lane program itself reaches "
          f"{span(id_lanes)} (double) on inverse dynamics rather than the 4× of its lanes: the sines and cosines are a larger share "
          "(instructions per state, cachegrind, UR5e ID, x86-64-v3: scalar 738 in the program and 314 in nelu::sincos; "
          "batch 166, 107 and 113 in the transposition); (3) the smallest robots (the double pendulum: 59 operations) "
          "are dominated by the call and the transposition. A lane-major layout that meets the targets would have the "
          "caller's arrays in blocks of W states read in place: W and the alignment would then be the caller's to know. "
          "Two layouts that keep W out of the interface were built and timed (UR5e FD, x86-64-v3, ns per state, against "
          "65.5 double and 38.9 float for NAME_batch) and dropped: component-major arrays (a structure of arrays, "
          "q NQ x n) 82.2 double at n = 256 (every column 2 kB apart: the 60 streams share a few cache sets) and "
          "68.9 at n = 264, float 33.6; lane-major blocks of W states copied into the lanes, 66.3 double, 32.7 float, "
          "derivatives 484 against 473: the copy costs what the transposition costs.", "",
          f"Throughput: the batch forms compute {rate(arms, 'batch_ns')} million states per second on the shipped arms "
          f"(UR5e, Panda; x86-64-v3, double; {rate(arms, 'batch_f_ns')} million in float) where MuJoCo's one state per "
          f"call manages {mujoco} million (docs/bench.md's main run: its ID without external wrenches, its FD with them).",
          tables(records)]
    return "\n".join(L)


def report(records):
    return tables(records)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nelu")
    ap.add_argument("--robots", default="")
    ap.add_argument("--derivatives", default="", help="robots (file names without .urdf) whose derivative solvers are timed too")
    ap.add_argument("--out")
    ap.add_argument("--only-derivatives", action="store_true",
                    help="time the derivative solvers only, and replace the derivative records of an existing --out with them")
    ap.add_argument("--report")
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    args = ap.parse_args()
    if args.report:
        print(section(json.load(open(args.report))))
        return
    records, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="nelu-batch.") as tmp:
        for robot in [r for r in args.robots.split(",") if r]:
            base = os.path.splitext(os.path.basename(robot))[0]
            for floating in (False, True):
                jobs = [] if args.only_derivatives else [("id", "id", False), ("fd", "fd", False)]
                if base in args.derivatives.split(","):
                    jobs += [(ZERO_FX_SPECS[s], s, True) for s in ("id", "fd")]
                for problem, label, deriv in jobs:
                    sys.stderr.write(f"batch: {base}{' floating' if floating else ''} {label}{' derivatives' if deriv else ''}\n")
                    rs, why = measure(args, tmp, robot, floating, problem, label, deriv)
                    records += rs
                    why = f"{base}{' floating' if floating else ''} {label}: {why}" if why else None
                    if why and why not in skipped:
                        skipped.append(why)
    data = {"records": records, "skipped": skipped}
    if args.only_derivatives and os.path.exists(args.out):  # the value records of the earlier run stay
        earlier = json.load(open(args.out))
        data["records"] = [r for r in earlier["records"] if not r["derivatives"]] + records
        data["skipped"] = earlier.get("skipped", []) + [s for s in skipped if s not in earlier.get("skipped", [])]
        data["derivatives_run"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    json.dump(data, open(args.out, "w"), indent=1)
    print(report(records))
    for s in skipped:
        print(f"\nnot compiled: {s}")


if __name__ == "__main__":
    main()
