#!/usr/bin/env python3
"""large.py: the large-robot measurements of scripts/bench.sh --large (docs/bench.md, "Large robots").

For every row (the small robots UR5e, Panda, Mini Cheetah fixed and floating, then every large robot
that bench/nelu_bench was built with, NELU_BENCH_LARGE: humanoid_winter, icub_reduced and the trees,
fixed and floating) and for ID and FD:
  - `nelu compile` of the `id` / `fd` preset, as the benchmark build runs it (double and float entry
    points), wall time; the generated .cpp must be the one nelu_bench was built from;
  - scripts/profile.sh --no-time on that .cpp: g++ -O2 -c wall time (every entry point; with
    -fstack-usage), cachegrind instructions and I1 misses per call of the double entry point,
    its machine-code bytes and its stack frames;
Writes one JSON file that bench/report.py turns into the "Large robots" section, together with the
times per call of the benchmark's run (docs/bench/large_results.json: Google Benchmark medians of the
generated double solver, the reference RNEA / ABA and every peer, in one nelu_bench run).
Wall times and CPU times (user + sys of the child) are both kept: the machine may be shared.

usage: large.py --nelu NELU --bench-dir BUILD/bench --out large.json [--robots REGEX]
"""
import argparse
import filecmp
import json
import os
import re
import tempfile
import time

from common import ROOT, SMALL_ROBOTS, arithmetic_ops, run

LARGE_PREFIXES = ("humanoid_winter", "icub_reduced", "tree")


def bench_robots(bench_dir):
    """[(robot, urdf, floating)] of NELU_BENCH_ROBOTS in bench_solvers.hpp, in build order."""
    text = open(os.path.join(bench_dir, "bench_solvers.hpp")).read()
    return [(m[0], m[1], m[2] == "true") for m in re.findall(r'X\((\w+), "([^"]+)", (true|false)\)', text)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nelu", required=True)
    ap.add_argument("--bench-dir", required=True, help="the build's bench/ directory (bench_solvers.hpp, nelu_generated/)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--robots", help="only the robots whose name matches this regular expression (a partial run)")
    args = ap.parse_args()
    robots = bench_robots(args.bench_dir)
    rows = [r for s in SMALL_ROBOTS for r in robots if r[0] == s] + [r for r in robots if r[0].startswith(LARGE_PREFIXES)]
    if args.robots:
        rows = [r for r in rows if re.fullmatch(args.robots, r[0])]
    elif not any(r[0].startswith(LARGE_PREFIXES) for r in rows):
        raise SystemExit("large: nelu_bench has no large robots (configure with -DNELU_BENCH_LARGE=ON)")
    records = []
    with tempfile.TemporaryDirectory(prefix="nelu-large.") as tmp:
        for robot, urdf, floating in rows:
            for problem in ("id", "fd"):
                name = f"{robot}_{problem}"
                out = os.path.join(tmp, name)
                cmd = [args.nelu, "compile", urdf, "--problem", problem, "--name", name, "-o", out]
                if floating:
                    cmd.append("--floating-base")
                compiled = run(cmd)
                cpp = os.path.join(out, name + ".cpp")
                built = os.path.join(args.bench_dir, "nelu_generated", name + ".cpp")
                if not filecmp.cmp(cpp, built, shallow=False):
                    raise SystemExit(f"large: {cpp} differs from {built}, which nelu_bench was built from (rebuild it)")
                prof = os.path.join(out, "profile")
                run(["bash", os.path.join(ROOT, "scripts", "profile.sh"), "--no-time", "--out", prof, cpp])
                with open(os.path.join(prof, "profile.json")) as f:
                    p = json.loads(f.readline())
                with open(os.path.join(out, name + ".json")) as f:
                    man = json.load(f)
                o = man["ops"]
                rec = {
                    "robot": robot, "problem": problem.upper(), "floating": floating, "nv": man["nv"],
                    "ops": arithmetic_ops(o), "sqrt": o.get("sqrt", 0), "sincos": o.get("sincos", 0),
                    "compile_s": round(compiled.wall_s, 3), "compile_cpu_s": round(compiled.cpu_s, 3),
                    "build_s": p["build_s"], "build_cpu_s": p["build_cpu_s"],
                    "instructions": p["Ir"], "I1_misses": p["I1mr"], "parts": max(p["parts"], 1),
                    "code_bytes": p["code_bytes"], "stack_bytes": p["stack_bytes_sum"],
                    "stack_estimate": man.get("stack", {}).get("estimate", {}).get("double"),
                }
                records.append(rec)
                print(f"large: {name:34s} ops {rec['ops']:7d}  {rec['instructions']:9.0f} instr"
                      f"  {rec['code_bytes']:8d} B  stack {rec['stack_bytes']:6d} B  nelu {compiled.wall_s:5.2f} s"
                      f"  g++ -O2 {p['build_s']:6.2f} s (CPU {p['build_cpu_s']:6.2f} s)", flush=True)
    with open(args.out, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "load_avg": os.getloadavg(), "records": records},
                  f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
