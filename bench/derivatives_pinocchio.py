#!/usr/bin/env python3
"""derivatives_pinocchio.py: nelu's derivative solvers against Pinocchio's analytic derivatives
(scripts/derivatives_pinocchio.sh; docs/derivatives.md and docs/bench.md, "Against Pinocchio").

For every robot (the shipped UR5e, Panda, Mini Cheetah fixed and floating, humanoid_winter floating;
the public robots of --shared-robots when present: iiwa, kinova, ur5, panda, solo12 and icub_reduced,
the last two fixed and floating):
  1. `nelu compile ROBOT --problem bench/specs/{id,fd}_zero_fx.yaml --derivatives --scalar double`
     under the names nelu_id and nelu_fd (the Panda of ../shared/robots with --ignore-mimic: its
     fingers are independent joints, as Pinocchio parses them); every solver in parallel;
  2. `g++ -O2 -c` of every generated .cpp, in parallel (--jobs), largest first; a .cpp identical to
     the one compiled by an earlier run in the same --work directory is not compiled again (its
     earlier build time is kept and marked);
  3. per robot, its two objects linked with the driver (bench/pinocchio_derivatives_driver.cpp,
     compiled once by CMake with Pinocchio at -O3; BUILD/bench/pinocchio_derivatives_link.txt), then
     run alone, one robot after the other, after every build has finished: --copies fresh copies of
     the linked binary (cp), run one after the other (straight-line code times differently with
     where its pages land, so one binary is one sample of that), each of which checks values and
     Jacobians against Pinocchio's and times alternating batches. A robot whose check fails is
     recorded with the driver's message and not timed; the script then exits 1 after writing.
     Each time is the median over the copies of each copy's median (the per-copy times are kept,
     "copies_ns", for the report's ratios and spreads).
  4. -march=x86-64-v3 and the horizon (issue 28: NAME_derivatives_batch, 50 knots, AVX2 double):
     every solver is compiled with --batch too (NAME.cpp is the same with and without it), and once
     more under the names nelu_id_v3 and nelu_fd_v3; where this machine has AVX2 and FMA
     (--no-horizon: never) those and NAME_batch.cpp are built `g++ -O2 -march=x86-64-v3` and
     linked: the driver checks the v3 derivatives against the generic ones and times them beside
     them; the driver checks each knot of one batch call against the scalar derivatives and
     times, in the same alternating rounds, one batch call on 50 knots against 50 calls of
     Pinocchio's derivatives, per knot (horizon_*_ns).
Writes one JSON file (--out) with, per robot, the driver's times and check errors, the manifests'
operation counts (value solver: `ops`; derivative solver: `derivatives.ops`; mul + add + div), the
generated C++ size and the nelu compile and g++ times (wall and CPU: user + sys); bench/report.py
turns it into tables.

usage: derivatives_pinocchio.py --nelu NELU --bench-dir BUILD/bench --out JSON
                                [--shared-robots DIR] [--robots REGEX] [--jobs N] [--work DIR] [--rounds R]
                                [--copies K]
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

from common import ROOT, SHARED_ROBOTS, ZERO_FX_SPECS, arithmetic_ops, build_cached, run

# (row name, URDF file, floating base, extra nelu flags, robot class); SHARED/ is --shared-robots
ROWS = [
    ("ur5e", "robots/ur5e.urdf", False, [], "6-DoF arm"),
    ("panda_gaz2019", "robots/panda_gaz2019.urdf", False, [], "7-DoF arm"),
    ("quadruped_minicheetah", "robots/quadruped_minicheetah.urdf", False, [], "quadruped, fixed base"),
    ("quadruped_minicheetah_floating", "robots/quadruped_minicheetah.urdf", True, [], "floating quadruped"),
    ("humanoid_winter_floating", "robots/humanoid_winter.urdf", True, [], "floating humanoid"),
    ("iiwa", "SHARED/iiwa.urdf", False, [], "7-DoF arm"),
    ("kinova", "SHARED/kinova.urdf", False, [], "arm"),
    ("ur5", "SHARED/ur5.urdf", False, [], "6-DoF arm"),
    ("panda", "SHARED/panda.urdf", False, ["--ignore-mimic"], "7-DoF arm and fingers"),
    ("solo12", "SHARED/solo12.urdf", False, [], "quadruped, fixed base"),
    ("solo12_floating", "SHARED/solo12.urdf", True, [], "floating quadruped"),
    ("icub_reduced", "SHARED/icub_reduced.urdf", False, [], "humanoid, fixed base"),
    ("icub_reduced_floating", "SHARED/icub_reduced.urdf", True, [], "floating humanoid"),
]


def compile_solver(nelu, row, problem, work, v3=False):
    """nelu compile of one solver into work/ROW/new/ under the name nelu_P (v3: nelu_P_v3, the same spec for the
    -march=x86-64-v3 build, which needs names of its own to be linked beside the generic one); returns its record."""
    name, urdf, floating, flags, _ = row
    new = os.path.join(work, name, "new")
    os.makedirs(new, exist_ok=True)
    base = f"nelu_{problem}" + ("_v3" if v3 else "")
    cmd = [nelu, "compile", urdf, "--problem", ZERO_FX_SPECS[problem], "--derivatives", "--scalar", "double",
           "--name", base, "-o", new] + ([] if v3 else ["--batch"]) + flags + (["--floating-base"] if floating else [])
    compiled = run(cmd, cwd=new)
    if v3:
        return {"v3_cpp_bytes": os.path.getsize(os.path.join(new, f"{base}.cpp"))}
    with open(os.path.join(new, f"nelu_{problem}.json")) as f:
        man = json.load(f)
    return {"compile_s": round(compiled.wall_s, 2), "compile_cpu_s": round(compiled.cpu_s, 2),
            "value_ops": arithmetic_ops(man["ops"]), "derivative_ops": arithmetic_ops(man["derivatives"]["ops"]), "jac_cols": man["derivatives"]["jac_cols"],
            "cpp_bytes": os.path.getsize(os.path.join(new, f"nelu_{problem}.cpp")),
            "batch_cpp_bytes": os.path.getsize(os.path.join(new, f"nelu_{problem}_batch.cpp"))}


# the horizon's batch forms: AVX2 double (four lanes), as issue 28's target names
BATCH_FLAGS = ["-O2", "-march=x86-64-v3"]


def has_avx2():
    """Whether this machine runs -march=x86-64-v3 code (AVX2 and FMA)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx2" in flags and "fma" in flags


def stage(row, problem, work, v3):
    """nelu_P.hpp, nelu_P.json and nelu_P_batch.hpp (and nelu_P_v3.hpp) copied from work/ROW/new/ to work/ROW/
    (before any object of the row is built: nelu_P_batch.cpp includes nelu_P.hpp)."""
    d = os.path.join(work, row[0])
    for f in [f"nelu_{problem}{ext}" for ext in (".hpp", ".json", "_batch.hpp")] + ([f"nelu_{problem}_v3.hpp"] if v3 else []):
        shutil.copyfile(os.path.join(d, "new", f), os.path.join(d, f))


def build_object(row, problem, work, cxx, kind=""):
    """g++ -O2 -c of work/ROW/new/nelu_P.cpp (kind "_batch": nelu_P_batch.cpp, kind "_v3": nelu_P_v3.cpp, both with
    BATCH_FLAGS) into work/ROW/, unless it was built before (common.build_cached); stage() first."""
    d = os.path.join(work, row[0])
    base = f"nelu_{problem}{kind}"
    return build_cached(os.path.join(d, "new", base + ".cpp"), os.path.join(d, base + ".cpp"), os.path.join(d, base + ".o"),
                        os.path.join(d, base + ".build.json"), cxx, BATCH_FLAGS if kind else ["-O2"], d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nelu", required=True)
    ap.add_argument("--bench-dir", required=True, help="the build's bench/ directory (pinocchio_derivatives_link.txt)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--shared-robots", default=SHARED_ROBOTS)
    ap.add_argument("--robots", help="only the rows whose name matches this regular expression")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--work", help="where the generated solvers and objects are kept (default BENCH_DIR/derivatives_pinocchio)")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--copies", type=int, default=3, help="fresh copies of each robot's driver, run one after the other")
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--no-horizon", action="store_true", help="do not build and time the batch forms (the horizon)")
    args = ap.parse_args()
    horizon = not args.no_horizon and has_avx2()
    if not args.no_horizon and not horizon:
        print("derivatives_pinocchio: no AVX2 and FMA on this machine: the horizon (batch forms, -march=x86-64-v3) is not timed",
              flush=True)
    args.nelu = os.path.abspath(args.nelu)
    link_file = os.path.join(args.bench_dir, "pinocchio_derivatives_link.txt")
    if not os.path.exists(link_file):
        raise SystemExit(f"derivatives_pinocchio: {link_file} not found: configure the build with Pinocchio "
                         "(-DNELU_BUILD_BENCHMARKS=ON, NELU_PINOCCHIO_DIR) and build nelu_bench_pinocchio_derivatives")
    with open(link_file) as f:
        link = f.read().split()
    work = os.path.abspath(args.work or os.path.join(args.bench_dir, "derivatives_pinocchio"))
    shared = os.path.abspath(args.shared_robots)
    rows, skipped = [], []
    for name, urdf, floating, flags, cls in ROWS:
        if args.robots and not re.fullmatch(args.robots, name):
            continue
        path = os.path.join(shared, urdf[len("SHARED/"):]) if urdf.startswith("SHARED/") else os.path.join(ROOT, urdf)
        if not os.path.exists(path):
            skipped.append(name)
            continue
        rows.append((name, path, floating, flags, cls))
    if skipped:
        print(f"derivatives_pinocchio: skipped (no URDF; --shared-robots {shared}): {', '.join(skipped)}", flush=True)
    jobs = [(row, p) for row in rows for p in ("id", "fd")]
    rec = {(row[0], p): {} for row, p in jobs}

    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for (row, p), r in zip(jobs, pool.map(lambda j: compile_solver(args.nelu, j[0], j[1], work), jobs)):
            rec[(row[0], p)].update(r)
            print(f"derivatives_pinocchio: nelu compile {row[0]:32s} {p}  {r['cpp_bytes'] / 1e6:6.2f} MB of C++"
                  f"  value ops {r['value_ops']:6d}  derivative ops {r['derivative_ops']:7d}  {r['compile_s']:6.1f} s", flush=True)
        if horizon:  # the same solvers under names of their own, for the -march=x86-64-v3 build
            for (row, p), r in zip(jobs, pool.map(lambda j: compile_solver(args.nelu, j[0], j[1], work, True), jobs)):
                rec[(row[0], p)].update(r)
    compile_wall = time.perf_counter() - start
    start = time.perf_counter()
    kinds = [""] + (["_batch", "_v3"] if horizon else [])
    builds = [(row, p, kind) for row, p in jobs for kind in kinds]
    size = lambda b: rec[(b[0][0], b[1])][(b[2][1:] + "_" if b[2] else "") + "cpp_bytes"]  # noqa: E731
    order = sorted(builds, key=lambda b: -size(b))  # largest first
    for row, p in jobs:
        stage(row, p, work, horizon)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(build_object, row, p, work, args.cxx.split(), kind): (row, p, kind) for row, p, kind in order}
        for fut in concurrent.futures.as_completed(futures):
            row, p, kind = futures[fut]
            r = fut.result()
            rec[(row[0], p)].update({(kind[1:] + "_" if kind else "") + k: v for k, v in r.items()})
            print(f"derivatives_pinocchio: g++ {' '.join(BATCH_FLAGS) if kind else '-O2'} {row[0]:32s} {p}{kind.replace('_', ' ')}"
                  f"  {r['build_s']:6.1f} s (CPU {r['build_cpu_s']:.1f} s)"
                  f"{'  (unchanged: built by an earlier run)' if r['reused'] else ''}", flush=True)
    build_wall = time.perf_counter() - start

    records, failed = [], []
    for name, urdf, floating, flags, cls in rows:
        d = os.path.join(work, name)
        exe = os.path.join(d, "driver")
        objs = ["nelu_id.o", "nelu_fd.o"] + ([f"nelu_{p}{k}.o" for p in ("id", "fd") for k in ("_batch", "_v3")] if horizon else [])
        run(["g++", "-o", exe] + [os.path.join(d, o) for o in objs] + link)
        r = {"robot": name, "class": cls, "urdf": os.path.relpath(urdf, ROOT), "floating": floating, "flags": flags,
             "id": rec[(name, "id")], "fd": rec[(name, "fd")]}
        copies, error = [], None
        for k in range(max(1, args.copies)):
            copy, out = f"{exe}.copy{k}", os.path.join(d, f"result{k}.json")
            shutil.copyfile(exe, copy)
            shutil.copymode(exe, copy)
            cmd = [copy, urdf, os.path.join(d, "nelu_id.json"), os.path.join(d, "nelu_fd.json"), "--rounds", str(args.rounds),
                   "--json", out] + (["--floating-base"] if floating else [])
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            os.remove(copy)
            if p.returncode != 0:  # a disagreement (or a failure): the row says so, nothing of it is timed
                sys.stderr.write(p.stdout + p.stderr)
                error = " ".join((p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1].split())
                break
            with open(out) as f:
                copies.append(json.load(f))
        if error:
            r["error"] = error
            failed.append(name)
            records.append(r)
            continue
        res = copies[0]
        r.update(nv=res["nv"], rounds=res["rounds"], copies=len(copies), copies_ns={})
        for k in res:
            if k.endswith("_check"):  # the worst of the copies (every copy checks the same 16 states)
                r[k] = {b: max(c[k][b] for c in copies) for b in res[k]}
            elif k.endswith("_ns"):
                r["copies_ns"][k] = [c[k] for c in copies]
                r[k] = statistics.median(r["copies_ns"][k])
        records.append(r)
        res = r
        print(f"derivatives_pinocchio: {name:32s} id {res['id_value_ns']:8.1f} / {res['pinocchio_rnea_ns']:8.1f} ns,"
              f" derivatives {res['id_derivatives_ns']:9.1f} / {res['pinocchio_rnea_derivatives_ns']:9.1f} ns;"
              f" fd {res['fd_value_ns']:8.1f} / {res['pinocchio_aba_ns']:8.1f} ns,"
              f" derivatives {res['fd_derivatives_ns']:9.1f} / {res['pinocchio_aba_derivatives_ns']:9.1f} ns (nelu / Pinocchio)"
              + (f"; horizon per knot id {res['horizon_id_batch_ns']:8.1f} / {res['horizon_pinocchio_rnea_derivatives_ns']:8.1f},"
                 f" fd {res['horizon_fd_batch_ns']:8.1f} / {res['horizon_pinocchio_aba_derivatives_ns']:8.1f} ns"
                 if "horizon_id_batch_ns" in res else ""),
              flush=True)
    cxx_version = subprocess.run(args.cxx.split() + ["--version"], capture_output=True, text=True).stdout.splitlines()[0]
    with open(args.out, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "load_avg": os.getloadavg(), "jobs": args.jobs,
                   "cxx": cxx_version, "compile_wall_s": round(compile_wall, 1), "build_wall_s": round(build_wall, 1),
                   "batch_flags": BATCH_FLAGS if horizon else None,
                   "records": records}, f, indent=1)
        f.write("\n")
    if failed:
        raise SystemExit(f"derivatives_pinocchio: the driver failed on {', '.join(failed)} (see above; rows marked in {args.out})")


if __name__ == "__main__":
    main()
