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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = {"x86-64": [], "x86-64-v3": ["-march=x86-64-v3"]}


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"batch: FAILED ({p.returncode}): {' '.join(cmd)}")
    return p.stdout


def key_values(text):
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out[parts[0]] = [float(x) for x in parts[1:]]
    return out


def code_sizes(binary, name):
    """Bytes of the functions of each form in a driver or object: {scalar|batch: {value|derivatives_double|float: bytes}}.
    The batch form: the lane programs, nelu::lanes (transposition, sincos) and the entry points
    NAME_batch..; the scalar form: NAME's functions and nelu::sincos."""
    sizes = {"scalar": {}, "batch": {}}
    for line in run(["nm", "-S", "-C", "--defined-only", binary]).splitlines():
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
    common = [args.cxx, "-std=c++17", "-O2", "-I", os.path.join(ROOT, "runtime/include"), "-I", os.path.join(ROOT, "bench"), "-I", out]
    for target, flags in TARGETS.items():
        exe = os.path.join(out, "driver_" + target)
        defs = [f"-DNELU_SOLVER={name}", f'-DNELU_BATCH_SOURCE="{name}_batch.cpp"'] + (["-DNELU_DERIVATIVES"] if derivatives else [])
        run(common + flags + defs + [os.path.join(ROOT, "bench/batch_driver.cpp"), os.path.join(out, name + ".cpp"), "-o", exe])
        times = key_values(run([exe]))
        sizes = code_sizes(exe, name)
        records.append({"robot": base, "floating": floating, "problem": label, "target": target, "derivatives": derivatives,
                        "ops": manifest["ops"]["mul"] + manifest["ops"]["add"] + manifest["ops"]["div"],
                        "times": {k: v[0] for k, v in times.items() if k.endswith("_ns")}, "width": times["width"],
                        "status": times["status"], "code": sizes})
    # AVX-512: compiled (with -Werror) and measured for size only
    obj = os.path.join(out, "batch_x86-64-v4.o")
    run(common + ["-march=x86-64-v4", "-Wall", "-Wextra", "-Werror", "-c", os.path.join(out, name + "_batch.cpp"), "-o", obj])
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


def report(records):
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
                  + "). Per state at n = 256, ns; ratios against the scalar double entry point of the same build:\n",
                  "| robot | problem | ops | scalar double | scalar float | batch double | batch float | lane-major double | lane-major float "
                  "| batch double / scalar | batch float / scalar | lane-major double / scalar | lane-major float / scalar | batch double states/s "
                  "| batch float states/s | peers, one state per call (docs/bench.md) |",
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
    lines += ["\n**Code size** (bytes of each form's functions, g++ -O2; the batch form's lane program, its transposition and "
              "nelu::lanes::sincos; the scalar form's function and nelu::sincos):\n",
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nelu")
    ap.add_argument("--robots", default="")
    ap.add_argument("--derivatives", default="", help="robots (file names without .urdf) whose derivative solvers are timed too")
    ap.add_argument("--out")
    ap.add_argument("--report")
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    args = ap.parse_args()
    if args.report:
        print(report(json.load(open(args.report))["records"]))
        return
    records, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="nelu-batch.") as tmp:
        for robot in [r for r in args.robots.split(",") if r]:
            base = os.path.splitext(os.path.basename(robot))[0]
            for floating in (False, True):
                jobs = [("id", "id", False), ("fd", "fd", False)]
                if base in args.derivatives.split(","):
                    jobs += [(os.path.join(ROOT, "bench/specs", s + "_zero_fx.yaml"), s, True) for s in ("id", "fd")]
                for problem, label, deriv in jobs:
                    sys.stderr.write(f"batch: {base}{' floating' if floating else ''} {label}{' derivatives' if deriv else ''}\n")
                    rs, why = measure(args, tmp, robot, floating, problem, label, deriv)
                    records += rs
                    if why:
                        skipped.append(f"{base}{' floating' if floating else ''} {label}: {why}")
    json.dump({"records": records, "skipped": skipped}, open(args.out, "w"), indent=1)
    print(report(records))
    for s in skipped:
        print(f"\nnot compiled: {s}")


if __name__ == "__main__":
    main()
