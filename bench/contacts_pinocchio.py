#!/usr/bin/env python3
"""contacts_pinocchio.py: nelu's generated contact-dynamics solvers (issue 27) against Pinocchio 3.7.0
(scripts/contacts_pinocchio.sh; docs/bench.md "Contact dynamics").

For every contact case of CASES (the floating Mini Cheetah with four point feet, the floating
humanoid with two 6-D soles, the fixed UR5e with a 6-D tool contact; LOCAL and
LOCAL_WORLD_ALIGNED; without and with Baumgarte gains; impulses with restitution 0.3):
  1. the problem spec (CASE/spec.yaml) and the driver's case file (CASE/case.json) are written
     from the case's one description here;
  2. `nelu compile ROBOT --problem spec.yaml --derivatives --scalar double` twice, under the names
     nelu_c and nelu_c_v3 (every compile in parallel);
  3. `g++ -O2 -c` of nelu_c.cpp and `g++ -O2 -march=x86-64-v3 -c` of nelu_c_v3.cpp, in parallel
     (--jobs), largest first; a .cpp identical to the one an earlier run in the same --work
     directory compiled is not compiled again (its build time is kept and marked);
  4. per case, the objects linked with the driver (bench/contacts_pinocchio_driver.cpp, compiled
     once by CMake with Pinocchio at -O3 -DNDEBUG; BUILD/bench/contacts_pinocchio_link.txt), then
     --copies fresh copies of the binary (cp), run one after the other, every case after every
     build has finished: each copy checks nelu against Pinocchio on --states random states (it
     exits 1 on a disagreement) and times alternating rounds. Per contender: the median over the
     copies of each copy's median, and the spread (max - min) / median over the copies.
  5. the horizon cases (horizon=True: the Mini Cheetah's four LOCAL points, the humanoid's two LOCAL
     soles) compile nelu_c_v3 with --batch too and build its nelu_c_v3_batch.cpp g++ -O2
     -march=x86-64-v3; their driver checks the batch form against the scalar one and Pinocchio and
     times a horizon of 50 knots (one batch call, 50 scalar calls, 50 Pinocchio calls), per knot.
With --cases, the run's records are merged into an existing --out (the other cases' records are
kept as they are; "partial_runs" says which rows come from which run), so that docs/bench.md's
section, written from the whole file, keeps the rows that were not measured again.
A case whose check fails is recorded with the driver's message and not timed; the script then
exits 1 after writing --out.

--check-only (the benchmark smoke of scripts/test.sh with NELU_SMOKE_CONTACTS=1, about 15 s): the SMOKE cases, each solver compiled once
with --cxx-flags (default -O1), values everywhere and derivatives where the case asks for them,
checked on --states states, nothing timed, no JSON; exit 1 on a disagreement.

usage: contacts_pinocchio.py --nelu NELU --bench-dir BUILD/bench --out JSON [--cases REGEX] [--jobs N]
                             [--work DIR] [--rounds R] [--copies K] [--states N]
       contacts_pinocchio.py --nelu NELU --bench-dir BUILD/bench --check-only [--states N]
       contacts_pinocchio.py --nelu NELU --bench-dir BUILD/bench --oracle DIR [--oracle-states K]
                             (tests/oracle/contacts: scripts/contact_oracle.sh)
       contacts_pinocchio.py --report JSON       (prints docs/bench.md's section)
"""
import argparse
import concurrent.futures
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from statistics import median

from common import ROOT, arithmetic_ops, build_cached, run

QUAD = "robots/quadruped_minicheetah.urdf"
HUMANOID = "robots/humanoid_winter.urdf"
UR5E = "robots/ur5e.urdf"
# the RL foot's contact point off the link's origin, and turned (its LOCAL axes are not the link's)
RL_ORIGIN = {"xyz": [0.01, -0.02, -0.02], "rpy": [0.3, -0.2, 1.1]}


def feet(frame, baumgarte=False):
    """The Mini Cheetah's four point feet; with baumgarte, per-component gains differing per foot."""
    out = []
    for i, link in enumerate(["FR_foot", "FL_foot", "RR_foot", "RL_foot"]):
        c = {"name": link.split("_")[0].lower(), "link": link, "type": "point", "frame": frame}
        if link == "RL_foot":
            c["origin"] = RL_ORIGIN
        if baumgarte:
            c["kp"] = [10.0 + i, 20.0 + i, 30.0 + i]
            c["kd"] = [2.0 + i, 3.0 + i, 4.0 + i]
        out.append(c)
    return out


def soles(frame, kd=False, kp=False):
    """The humanoid's two 6-D soles (origins as issue 27's example); with kd, damping per component;
    with kp, stiffness per component (the placement error -log6 against a reference placement)."""
    out = [{"name": "l_sole", "link": "l_foot", "type": "6d", "frame": frame, "origin": {"xyz": [0.05, 0, -0.08], "rpy": [0, 0, 0]}},
           {"name": "r_sole", "link": "r_foot", "type": "6d", "frame": frame, "origin": {"xyz": [0.04, 0.01, -0.08], "rpy": [0.1, 0.2, -0.7]}}]
    if kd:
        out[0]["kd"] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        out[1]["kd"] = [2.0] * 6
    if kp:
        out[0]["kp"] = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
        out[1]["kp"] = [25.0] * 6
    return out


def tool(frame, kd=False, kp=False):
    c = {"name": "tool", "link": "tool0", "type": "6d", "frame": frame, "origin": {"xyz": [0, 0, 0.05], "rpy": [0.4, 0, 0.2]}}
    if kd:
        c["kd"] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    if kp:
        c["kp"] = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    return [c]


def case(name, robot, urdf, floating, problem, contacts, label, restitution=None, derivatives=True, horizon=False):
    """horizon: also the batch form of the derivatives (nelu_c_v3 compiled with --batch), timed on a horizon of 50 knots."""
    return {"name": name, "robot": robot, "urdf": urdf, "floating": floating, "problem": problem, "contacts": contacts,
            "label": label, "restitution": restitution, "derivatives": derivatives, "horizon": horizon}


Q, H, U = "Mini Cheetah (floating)", "humanoid_winter (floating)", "UR5e (fixed)"
CASES = [
    case("minicheetah_points_local", Q, QUAD, True, "fd", feet("local"), "4 points, LOCAL", horizon=True),
    case("minicheetah_points_lwa", Q, QUAD, True, "fd", feet("local_world_aligned"), "4 points, LWA"),
    case("minicheetah_points_local_baumgarte", Q, QUAD, True, "fd", feet("local", True), "4 points, LOCAL, Baumgarte kp, kd"),
    case("minicheetah_points_lwa_baumgarte", Q, QUAD, True, "fd", feet("local_world_aligned", True), "4 points, LWA, Baumgarte kp, kd"),
    case("minicheetah_impulse_local", Q, QUAD, True, "impulse", feet("local"), "4 points, LOCAL, impulse r = 0.3", 0.3),
    case("minicheetah_impulse_lwa", Q, QUAD, True, "impulse", feet("local_world_aligned"), "4 points, LWA, impulse r = 0.3", 0.3),
    case("humanoid_soles_local", H, HUMANOID, True, "fd", soles("local"), "2 soles 6-D, LOCAL", horizon=True),
    case("humanoid_soles_lwa", H, HUMANOID, True, "fd", soles("local_world_aligned"), "2 soles 6-D, LWA"),
    case("humanoid_soles_local_kd", H, HUMANOID, True, "fd", soles("local", True), "2 soles 6-D, LOCAL, Baumgarte kd"),
    case("humanoid_soles_lwa_kd", H, HUMANOID, True, "fd", soles("local_world_aligned", True), "2 soles 6-D, LWA, Baumgarte kd"),
    case("humanoid_soles_local_kpkd", H, HUMANOID, True, "fd", soles("local", True, True), "2 soles 6-D, LOCAL, Baumgarte kp, kd"),
    case("humanoid_impulse_local", H, HUMANOID, True, "impulse", soles("local"), "2 soles 6-D, LOCAL, impulse r = 0.3", 0.3),
    case("ur5e_tool_local", U, UR5E, False, "fd", tool("local"), "6-D tool, LOCAL"),
    case("ur5e_tool_lwa", U, UR5E, False, "fd", tool("local_world_aligned"), "6-D tool, LWA"),
    case("ur5e_tool_local_kd", U, UR5E, False, "fd", tool("local", True), "6-D tool, LOCAL, Baumgarte kd"),
    case("ur5e_tool_lwa_kd", U, UR5E, False, "fd", tool("local_world_aligned", True), "6-D tool, LWA, Baumgarte kd"),
    case("ur5e_tool_local_kpkd", U, UR5E, False, "fd", tool("local", True, True), "6-D tool, LOCAL, Baumgarte kp, kd"),
]


def mixed_feet():
    """Both frames on one robot, gains on two feet (one of them off its link's origin)."""
    fs = feet("local", True)
    for c in fs[1::2]:
        c["frame"] = "local_world_aligned"
    for c in fs[:2]:
        c.pop("kp"), c.pop("kd")
    return fs


def mixed_soles():
    s = soles("local", True, True)
    s[1]["frame"] = "local_world_aligned"
    return s


# the benchmark smoke (--check-only): every contact kind, frame and gain once, the derivatives on the
# arm (whose derivative solvers take seconds of g++ -O1, the legged robots' a minute): about 15 s
SMOKE = [
    case("smoke_minicheetah_mixed_baumgarte", Q, QUAD, True, "fd", mixed_feet(), "4 points, both frames, kp, kd", derivatives=False),
    case("smoke_minicheetah_impulse_mixed", Q, QUAD, True, "impulse",
         [dict(c, frame="local_world_aligned" if i % 2 else "local") for i, c in enumerate(feet("local"))], "impulse", 0.3,
         derivatives=False),
    case("smoke_humanoid_mixed_kpkd", H, HUMANOID, True, "fd", mixed_soles(), "2 soles, both frames, kp, kd", derivatives=False),
    case("smoke_ur5e_tool_lwa", U, UR5E, False, "fd", tool("local_world_aligned"), "6-D tool, LWA"),
    case("smoke_ur5e_tool_local_kpkd", U, UR5E, False, "fd", tool("local", True, True), "6-D tool, LOCAL, kp, kd"),
    case("smoke_ur5e_tool_impulse", U, UR5E, False, "impulse", tool("local_world_aligned"), "6-D tool, LWA, impulse", 0.3),
]


def spec_yaml(c):
    """The problem spec of case c."""
    lines = ["# written by bench/contacts_pinocchio.py", "version: 2", f"problem: {c['problem']}"]
    if c["floating"]:
        lines.append("floating_base: true")
    if c["problem"] == "impulse":
        lines.append(f"restitution: {c['restitution']}")
    else:
        lines.append("external_wrenches: zero")
    lines.append("contacts:")
    for k in c["contacts"]:
        items = [f"name: {k['name']}", f"link: {k['link']}", f"type: {k['type']}", f"frame: {k['frame']}"]
        if "origin" in k:
            items.append(f"origin: {{xyz: {k['origin']['xyz']}, rpy: {k['origin']['rpy']}}}")
        gains = [f"{g}: {k[g]}" for g in ("kp", "kd") if g in k]
        if gains:
            items.append("baumgarte: {" + ", ".join(gains) + "}")
        lines.append("  - {" + ", ".join(items) + "}")
    lines.append("outputs: [joint_velocities, contact_impulses]" if c["problem"] == "impulse"
                 else "outputs: [joint_accelerations, contact_forces]")
    return "\n".join(lines) + "\n"


def case_json(c, manifest):
    """The driver's case file: the contacts with gains per component (nelu's order: 6-D angular first)."""
    contacts = []
    for k in c["contacts"]:
        dim = 3 if k["type"] == "point" else 6
        d = {"name": k["name"], "link": k["link"], "type": k["type"], "frame": k["frame"]}
        if "origin" in k:
            d["xyz"], d["rpy"] = k["origin"]["xyz"], k["origin"]["rpy"]
        for g in ("kp", "kd"):
            v = k.get(g, 0.0)
            d[g] = list(v) if isinstance(v, list) else [float(v)] * dim
        contacts.append(d)
    return {"name": c["name"], "urdf": os.path.join(ROOT, c["urdf"]), "floating": c["floating"], "problem": c["problem"],
            "restitution": c["restitution"] or 0.0, "contacts": contacts, "manifest": manifest}


def compile_solver(nelu, c, name, work, derivatives, batch=False):
    """nelu compile of case c under NAME into work/CASE/new/ (with batch, also NAME_batch.cpp); returns its record."""
    d = os.path.join(work, c["name"])
    new = os.path.join(d, "new")
    os.makedirs(new, exist_ok=True)
    spec = os.path.join(d, "spec.yaml")
    # both targets of a case write the same spec, maybe at once: each its own file, renamed into place
    # (a reader never sees a half-written one)
    with open(f"{spec}.{name}", "w") as f:
        f.write(spec_yaml(c))
    os.replace(f"{spec}.{name}", spec)
    cmd = [nelu, "compile", os.path.join(ROOT, c["urdf"]), "--problem", spec, "--scalar", "double", "--name", name, "-o", new]
    if derivatives:
        cmd.append("--derivatives")
    if batch:
        cmd.append("--batch")
    compiled = run(cmd, cwd=new)
    with open(os.path.join(new, f"{name}.json")) as f:
        man = json.load(f)
    r = {"compile_s": round(compiled.wall_s, 2), "compile_cpu_s": round(compiled.cpu_s, 2), "value_ops": arithmetic_ops(man["ops"]),
         "cpp_bytes": os.path.getsize(os.path.join(new, f"{name}.cpp")), "ordering": man["ordering"]["winner"]}
    if derivatives:
        r.update(derivative_ops=arithmetic_ops(man["derivatives"]["ops"]), jac_cols=man["derivatives"]["jac_cols"],
                 derivative_form=man["derivatives"].get("form"))
        lanes = man["derivatives"].get("lanes")  # the columns in lanes: operations per call, W columns per instruction
        if lanes:
            r.update(lane_ops_w2=lanes["ops_per_call"]["W2"], lane_ops_w4=lanes["ops_per_call"]["W4"])
    if batch:
        r["batch_cpp_bytes"] = os.path.getsize(os.path.join(new, f"{name}_batch.cpp"))
    return r


def stage(c, name, work):
    """NAME.hpp and NAME.json (NAME_batch: its .hpp only) copied from work/CASE/new/ to work/CASE/."""
    d = os.path.join(work, c["name"])
    for ext in (".hpp",) if name.endswith("_batch") else (".hpp", ".json"):
        shutil.copyfile(os.path.join(d, "new", name + ext), os.path.join(d, name + ext))


def build_object(c, name, flags, work, cxx, staged=False):
    """g++ FLAGS -c of work/CASE/new/NAME.cpp into work/CASE/, unless it was built before (common.build_cached).
    staged: stage() was called for every object of the case before any was built (NAME_batch.cpp includes NAME.hpp)."""
    d = os.path.join(work, c["name"])
    if not staged:
        stage(c, name, work)
    return build_cached(os.path.join(d, "new", name + ".cpp"), os.path.join(d, name + ".cpp"), os.path.join(d, name + ".o"),
                        os.path.join(d, name + ".build.json"), cxx, flags, d)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nelu")
    ap.add_argument("--bench-dir", help="the build's bench/ directory (contacts_pinocchio_link.txt)")
    ap.add_argument("--out")
    ap.add_argument("--cases", help="only the cases whose name matches this regular expression")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--work", help="where the generated solvers and objects are kept (default BENCH_DIR/contacts_pinocchio)")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--copies", type=int, default=3)
    ap.add_argument("--states", type=int, default=50)
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--cxx-flags", default="-O1", help="with --check-only: the generated code's flags")
    ap.add_argument("--report", help="print docs/bench.md's section from this JSON file")
    ap.add_argument("--oracle", help="write the oracle files of tests/test_oracle.cpp into this directory (ORACLE cases)")
    ap.add_argument("--oracle-states", type=int, default=3)
    args = ap.parse_args()
    if args.report:
        with open(args.report) as f:
            print(section(json.load(f)))
        return
    if not args.nelu or not args.bench_dir or not (args.out or args.check_only or args.oracle):
        ap.error("--nelu, --bench-dir and --out (or --check-only, or --oracle) are required")
    args.nelu = os.path.abspath(args.nelu)
    link_file = os.path.join(args.bench_dir, "contacts_pinocchio_link.txt")
    if not os.path.exists(link_file):
        raise SystemExit(f"contacts_pinocchio: {link_file} not found: configure the build with Pinocchio "
                         "(-DNELU_BUILD_BENCHMARKS=ON, NELU_PINOCCHIO_DIR) and build nelu_bench_contacts_pinocchio")
    with open(link_file) as f:
        link = f.read().split()
    cxx = args.cxx.split()
    if args.check_only:
        check_only(args, link, cxx)
        return
    if args.oracle:
        write_oracle(args, link, cxx)
        return
    work = os.path.abspath(args.work or os.path.join(args.bench_dir, "contacts_pinocchio"))
    cases = [c for c in CASES if not args.cases or re.fullmatch(args.cases, c["name"])]
    targets = [("nelu_c", ["-O2"]), ("nelu_c_v3", ["-O2", "-march=x86-64-v3"])]
    jobs = [(c, name) for c in cases for name, _ in targets]
    rec = {(c["name"], name): {} for c, name in jobs}

    start = time.perf_counter()
    # a horizon case's nelu_c_v3 is compiled with --batch too (NAME.cpp is the same with and without it)
    batch = lambda c, name: c["horizon"] and name == "nelu_c_v3"  # noqa: E731
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for (c, name), r in zip(jobs, pool.map(lambda j: compile_solver(args.nelu, j[0], j[1], work, True, batch(*j)), jobs)):
            rec[(c["name"], name)].update(r)
            extra = f" (batch {r['batch_cpp_bytes'] / 1e6:.2f} MB)" if "batch_cpp_bytes" in r else ""
            print(f"contacts_pinocchio: nelu compile {c['name']:36s} {name:9s} {r['cpp_bytes'] / 1e6:6.2f} MB of C++{extra}"
                  f"  value ops {r['value_ops']:6d}  derivative ops {r['derivative_ops']:7d}  {r['compile_s']:6.1f} s", flush=True)
    compile_wall = time.perf_counter() - start
    for c in cases:  # the two compiles of one case must be the same code
        a, b = rec[(c["name"], "nelu_c")], rec[(c["name"], "nelu_c_v3")]
        if (a["value_ops"], a["derivative_ops"]) != (b["value_ops"], b["derivative_ops"]):
            raise SystemExit(f"contacts_pinocchio: {c['name']}: the two nelu compiles differ in operations")
    start = time.perf_counter()
    flags = dict(targets, nelu_c_v3_batch=dict(targets)["nelu_c_v3"])
    size = {(c["name"], name): rec[(c["name"], name)]["cpp_bytes"] for c, name in jobs}
    for c in cases:  # the batch form of the derivatives: its own object, built as nelu_c_v3
        if c["horizon"]:
            jobs.append((c, "nelu_c_v3_batch"))
            size[(c["name"], "nelu_c_v3_batch")] = rec[(c["name"], "nelu_c_v3")]["batch_cpp_bytes"]
    order = sorted(jobs, key=lambda j: -size[(j[0]["name"], j[1])])  # largest first
    for c, name in order:
        stage(c, name, work)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(build_object, c, name, flags[name], work, cxx, True): (c, name) for c, name in order}
        for fut in concurrent.futures.as_completed(futures):
            c, name = futures[fut]
            r = fut.result()
            if name == "nelu_c_v3_batch":
                r = {"batch_" + k: v for k, v in r.items()}
                name = "nelu_c_v3"
            rec[(c["name"], name)].update(r)
            b = "batch_" if "batch_build_s" in r else ""
            print(f"contacts_pinocchio: g++ {' '.join(flags[name]):24s} {c['name'] + (' (batch)' if b else ''):36s} "
                  f"{r[b + 'build_s']:6.1f} s (CPU {r[b + 'build_cpu_s']:.1f} s)"
                  f"{'  (unchanged: built by an earlier run)' if r[b + 'reused'] else ''}", flush=True)
    build_wall = time.perf_counter() - start

    records, failed = [], []
    for c in cases:
        d = os.path.join(work, c["name"])
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump(case_json(c, os.path.join(d, "nelu_c.json")), f, indent=1)
        exe = os.path.join(d, "driver")
        objects = ["nelu_c.o", "nelu_c_v3.o"] + (["nelu_c_v3_batch.o"] if c["horizon"] else [])
        run([cxx[0], "-o", exe] + [os.path.join(d, o) for o in objects] + link)
        r = {"case": c["name"], "robot": c["robot"], "label": c["label"], "problem": c["problem"], "urdf": c["urdf"],
             "spec": spec_yaml(c), "o2": rec[(c["name"], "nelu_c")], "v3": rec[(c["name"], "nelu_c_v3")]}
        copies = []
        for k in range(args.copies):
            copy = f"{exe}.copy{k}"
            shutil.copyfile(exe, copy)
            shutil.copymode(exe, copy)
            out = os.path.join(d, f"result{k}.json")
            p = subprocess.run([copy, os.path.join(d, "case.json"), "--states", str(args.states), "--rounds", str(args.rounds),
                                "--json", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            os.remove(copy)
            if p.returncode != 0:
                sys.stderr.write(p.stdout + p.stderr)
                r["error"] = " ".join((p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1].split())
                break
            if k == 0:
                print("\n".join(p.stdout.splitlines()[:2 if c["horizon"] else 1]), flush=True)
            with open(out) as f:
                copies.append(json.load(f))
        if "error" in r:
            failed.append(c["name"])
            records.append(r)
            continue
        first = copies[0]
        r.update({k: first[k] for k in ("nv", "nc", "states", "redrawn", "check", "pinocchio_defects", "rounds", "batch_check", "horizon_knots")
                  if k in first})
        for k in ("pv_error", "caba_error", "caba_mu", "caba_iterations"):
            if k in first:
                r[k] = max(x[k] for x in copies) if k.endswith("error") else first[k]
        r["copies"] = len(copies)
        r["times"] = {}
        for key in first:
            if key.endswith("_ns"):
                xs = [x[key] for x in copies]
                m = median(xs)
                r["times"][key] = {"median": m, "spread": (max(xs) - min(xs)) / m, "copies": xs}
        records.append(r)
        t = r["times"]
        print(f"contacts_pinocchio: {c['name']:36s} nelu {t['nelu_ns']['median']:8.1f} / {t['nelu_v3_ns']['median']:8.1f} (v3)"
              f" / Pinocchio {t['pinocchio_ns']['median']:8.1f} ns; derivatives {t['nelu_derivatives_ns']['median']:9.1f}"
              f" / {t['nelu_v3_derivatives_ns']['median']:9.1f} / {t['pinocchio_derivatives_ns']['median']:9.1f} ns", flush=True)
        if "horizon_nelu_v3_batch_ns" in t:
            print(f"contacts_pinocchio: {c['name']:36s} horizon of {r['horizon_knots']} knots, ns per knot: batch (v3) "
                  f"{t['horizon_nelu_v3_batch_ns']['median']:9.1f} / scalar (v3) {t['horizon_nelu_v3_ns']['median']:9.1f} / Pinocchio "
                  f"{t['horizon_pinocchio_ns']['median']:9.1f}: {_cr(r, 'horizon_pinocchio_ns', 'horizon_nelu_v3_batch_ns'):.2f}x", flush=True)
    cxx_version = subprocess.run(cxx + ["--version"], capture_output=True, text=True).stdout.splitlines()[0]
    run_info = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "load_avg": os.getloadavg(), "jobs": args.jobs, "cpu": cpu_model(),
                "ncpu": os.cpu_count(), "cxx": cxx_version, "compile_wall_s": round(compile_wall, 1), "build_wall_s": round(build_wall, 1),
                "rounds": args.rounds, "copies": args.copies, "states": args.states}
    data = dict(run_info, records=records)
    if args.cases and os.path.exists(args.out):
        data = merge(args.out, run_info, records)
    with open(args.out, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    if failed:
        raise SystemExit(f"contacts_pinocchio: the driver failed on {', '.join(failed)} (see above; rows marked in {args.out})")


def merge(path, run_info, records):
    """A run of some cases (--cases) merged into the records of PATH: its records replace those of the same
    cases, the others are kept as they are; the file's run description stays that of the run that measured
    the most cases, and this run's is listed under "partial_runs" with its cases (each record names its run)."""
    with open(path) as f:
        data = json.load(f)
    names = [r["case"] for r in records]
    for r in records:
        r["run"] = run_info["date"]
    kept = [r for r in data["records"] if r["case"] not in names]
    order = {c["name"]: i for i, c in enumerate(CASES)}
    data["records"] = sorted(kept + records, key=lambda r: order.get(r["case"], len(order)))
    runs = [p for p in data.get("partial_runs", []) if any(r.get("run") == p["date"] for r in data["records"])]
    data["partial_runs"] = runs + [dict(run_info, cases=names)]
    return data


def unchecked_drivers(args, cases, work, link, cxx, flags, derivatives):
    """Each case compiled as nelu_c (with --derivatives where derivatives(case)), built with flags, its case file
    written and the driver linked, in work/CASE/: returns (driver, case file) per case, nothing run."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(lambda c: compile_solver(args.nelu, c, "nelu_c", work, derivatives(c)), cases))
        list(pool.map(lambda c: build_object(c, "nelu_c", flags, work, cxx), cases))
    out = []
    for c in cases:
        d = os.path.join(work, c["name"])
        case = os.path.join(d, "case.json")
        with open(case, "w") as f:
            json.dump(case_json(c, os.path.join(d, "nelu_c.json")), f, indent=1)
        exe = os.path.join(d, "driver")
        run([cxx[0], "-o", exe, os.path.join(d, "nelu_c.o")] + link)
        out.append((exe, case))
    return out


def check_only(args, link, cxx):
    """The benchmark smoke: the SMOKE cases compiled with --cxx-flags, checked, not timed."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="nelu-contacts-") as work:
        cases = [c for c in SMOKE if not args.cases or re.fullmatch(args.cases, c["name"])]
        drivers = unchecked_drivers(args, cases, work, link, cxx, args.cxx_flags.split(), lambda c: c["derivatives"])
        failed = []
        for c, (exe, case) in zip(cases, drivers):
            p = subprocess.run([exe, case, "--check-only", "--states", str(min(args.states, 20))],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            sys.stdout.write("".join("check contacts (generated): " + line + "\n" for line in p.stdout.splitlines()))
            if p.returncode != 0:
                sys.stderr.write(p.stderr)
                failed.append(c["name"])
    if failed:
        raise SystemExit(f"contacts_pinocchio: nelu's generated contact solvers disagree with Pinocchio on {', '.join(failed)}")
    print(f"check contacts (generated): {len(cases)} cases agree with Pinocchio 3.7")


# the oracle files of tests/test_oracle.cpp (--oracle DIR): every contact kind, frame, gain and the
# impulse once (the SMOKE cases), and the plain LOCAL cases of the two legged robots
ORACLE = SMOKE + [c for c in CASES if c["name"] in ("minicheetah_points_local", "humanoid_impulse_local")]


def write_oracle(args, link, cxx):
    """Pinocchio's values and derivatives at a few regular states of each ORACLE case, in nelu's slots
    (the driver's --oracle), with the case's problem spec, into DIR/CASE.json."""
    import tempfile
    os.makedirs(args.oracle, exist_ok=True)
    cases = [c for c in ORACLE if not args.cases or re.fullmatch(args.cases, c["name"])]
    with tempfile.TemporaryDirectory(prefix="nelu-contact-oracle-") as work:
        drivers = unchecked_drivers(args, cases, work, link, cxx, ["-O1"], lambda c: False)
        for c, (exe, case) in zip(cases, drivers):
            raw = os.path.join(work, c["name"], "oracle.json")
            run([exe, case, "--check-only", "--states", "16", "--oracle", raw,
                 "--oracle-states", str(args.oracle_states)])
            with open(raw) as f:
                o = json.load(f)
            head = {"generator": "bench/contacts_pinocchio.py --oracle (Pinocchio 3.7.0: constraintDynamics, impulseDynamics, "
                                 "computeConstraintDynamicsDerivatives, computeImpulseDynamicsDerivatives)",
                    "case": c["name"], "label": c["label"], "urdf": c["urdf"], "spec": spec_yaml(c)}
            head.update({k: o[k] for k in ("problem", "nq", "nv", "nin", "nout", "njac", "difference_tolerance", "differences")})
            lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()] + [' "states": [']
            for i, st in enumerate(o["states"]):
                lines.append("  {" + ", ".join(f"{json.dumps(k)}: {json.dumps(st[k])}" for k in ("q", "qd", "in", "out")) + ', "jac": [')
                lines += ["   " + json.dumps(row) + ("," if r + 1 < len(st["jac"]) else "") for r, row in enumerate(st["jac"])]
                lines.append("  ]}" + ("," if i + 1 < len(o["states"]) else ""))
            lines += [" ]", "}"]
            out = os.path.join(args.oracle, c["name"] + ".json")
            with open(out + ".tmp", "w") as f:
                f.write("\n".join(lines) + "\n")
            os.replace(out + ".tmp", out)
            print(f"contact oracle: {out}: {len(o['states'])} states, {len(o['differences'])} blocks of Pinocchio's analytic "
                  "derivatives replaced by central differences of its values")


# ------------------------------------------------------------------------------------------------
# docs/bench.md "Contact dynamics"

def section(data):
    return "\n".join(section_lines(data))


def _ns(v):
    return "–" if v is None else (f"{v:,.0f}" if v >= 100 else f"{v:.1f}")


def _rx(v):
    return "–" if v is None else f"{v:.2f}×"


def _t(r, key):
    t = r.get("times", {}).get(key)
    return t["median"] if t else None


def _ratio(a, b):
    return None if not a or not b else a / b


def _cr(r, key_p, key_n):
    """Pinocchio's time over nelu's: the median over the copies of each copy's ratio (the two were timed in
    the same process, in alternating rounds, so load that slows a whole copy cancels)."""
    t = r.get("times", {})
    if key_p not in t or key_n not in t:
        return None
    return median([a / b for a, b in zip(t[key_p]["copies"], t[key_n]["copies"])])


def _rspread(r, pairs):
    """The largest (max - min) / median over the copies of the row's ratios."""
    t = r.get("times", {})
    out = []
    for kp, kn in pairs:
        if kp in t and kn in t:
            xs = [a / b for a, b in zip(t[kp]["copies"], t[kn]["copies"])]
            out.append((max(xs) - min(xs)) / median(xs))
    return f"{max(out) * 100:.1f} %" if out else "–"


def _spread(r, keys):
    xs = [r["times"][k]["spread"] for k in keys if k in r.get("times", {})]
    return f"{max(xs) * 100:.1f} %" if xs else "–"


def _e(v):
    return "–" if v is None else f"{v:.1e}"


def section_lines(data):
    recs = [r for r in data["records"] if "error" not in r]
    failed = [r for r in data["records"] if "error" in r]
    L = []
    w = L.append
    w("## Contact dynamics")
    w("")
    w("Generated by `bash scripts/contacts_pinocchio.sh` (issue 27; `bench/contacts_pinocchio.py`, "
      "`bench/contacts_pinocchio_driver.cpp`, records in `docs/bench/contacts_pinocchio.json`), a run of its own, "
      f"{data['date']}: {data.get('cpu', '?')}, {data.get('ncpu', '?')} CPUs shared with other work (load average "
      f"{', '.join(f'{x:.1f}' for x in data['load_avg'])} at the end), {data['cxx']}." +
      "".join(f" The rows of {', '.join(p['cases'])} are from a later run of those cases alone (`NELU_CONTACTS_CASES`), "
              f"{p['date']}, {p['copies']} copies of {p['rounds']} rounds (load average "
              f"{', '.join(f'{x:.1f}' for x in p['load_avg'])} at the end)" +
              (f", on another machine ({p['cpu']}: ratios from different machines are not comparable)"
               if p.get('cpu', data.get('cpu')) != data.get('cpu') else "") + "." for p in data.get("partial_runs", [])))
    w("")
    w("Per case, the problem spec (in the records) is compiled by `nelu compile ROBOT --problem SPEC --derivatives "
      "--scalar double` twice, under the names `nelu_c` (built `g++ -O2`, generic x86-64: the \"-O2\" columns) and "
      "`nelu_c_v3` (`g++ -O2 -march=x86-64-v3`: AVX2 and FMA, the \"v3\" columns), and linked with the driver, in "
      "which Pinocchio 3.7.0 is built `-O3 -DNDEBUG` (generic x86-64, as in every other table of this page). One "
      "process per case: it first checks nelu against Pinocchio on "
      f"{data['states']} random states (it exits 1 on a disagreement: below), then times every contender in "
      f"{data['rounds']} alternating rounds (each round times each contender once, at least 20 ms cycling through the "
      "first 16 checked states); a contender's time is the median over the rounds of the CPU time per call. That "
      f"binary is copied (`cp`) {data['copies']} times and each copy run once, one after the other: each number "
      "below is the **median over the copies**, and \"time spread\" the largest (max − min) / median over the copies "
      "of the row's contenders (load from other work on the machine slows whole copies). \"÷\" is Pinocchio's time "
      "over nelu's (above 1: nelu is faster), the median over the copies of each copy's ratio (both timed in the "
      "same process, so such load cancels), and \"÷ spread\" the largest (max − min) / median of the row's ratios. ops: mul + add + div "
      "of the manifest (`ops`; `derivatives.ops`).")
    w("")
    w("Pinocchio's calls: `constraintDynamics(model, data, q, v, tau, contact_models, contact_datas, settings)` "
      "with `ProximalSettings(1e-12, mu = 0, max_iter = 1)` and `initConstraintDynamics` once before the timed "
      "calls (for `problem: impulse`: `impulseDynamics(..., r = 0.3, settings)`); `pv` (mu = 0, one iteration: "
      "exact) and `constrainedABA` (it requires mu > 0; mu = 1e-6 and 5 proximal iterations, the cheapest setting found that reproduces "
      "`constraintDynamics` to 1e-8 on the three robots) after `initPvSolver` once; derivatives: the value call followed "
      "by `computeConstraintDynamicsDerivatives` (`computeImpulseDynamicsDerivatives`, with `data.dvc_dq` "
      "cleared first: see the agreement below). Pinocchio's contact models are built from its own URDF model "
      "(the link's BODY frame and the spec's `origin`), not from nelu's; for Baumgarte cases each state's "
      "references are in its own prepared `contact_models` vector.")
    w("")
    w("Commands: `bash scripts/contacts_pinocchio.sh` (all of it: the build of nelu and of the driver, then "
      "`bench/contacts_pinocchio.py`; `NELU_CONTACTS_CASES=REGEX` for some cases, `NELU_CONTACTS_COPIES`, "
      "`NELU_CONTACTS_ROUNDS`); `bash scripts/contacts_pinocchio.sh --report` (or `scripts/bench.sh --report`) "
      "rewrites this section from the JSON file; the agreement check alone, on six small cases compiled `g++ -O1` "
      "(about 20 s once the driver is built; the benchmark smoke of `scripts/test.sh` runs it with "
      "`NELU_SMOKE_CONTACTS=1`): `python3 bench/contacts_pinocchio.py --nelu "
      "BUILD/compiler/nelu --bench-dir BUILD/bench --check-only`.")
    w("")
    # ---- values
    w("### Values: ns per call")
    w("")
    w("| robot | contacts | nv | contact rows | ops | nelu -O2 | nelu v3 | Pinocchio | ÷ (-O2) | ÷ (v3) | pv | constrainedABA "
      "| pv ÷ nelu (-O2) | cABA ÷ nelu (-O2) | time spread | ÷ spread |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in recs:
        n, v3, p = _t(r, "nelu_ns"), _t(r, "nelu_v3_ns"), _t(r, "pinocchio_ns")
        pv, caba = _t(r, "pv_ns"), _t(r, "caba_ns")
        what = "impulseDynamics" if r["problem"] == "impulse" else "constraintDynamics"
        w(f"| {r['robot']} | {r['label']} | {r['nv']} | {r['nc']} | {r['o2']['value_ops']:,} | {_ns(n)} | {_ns(v3)} | "
          f"{_ns(p)} ({what}) | {_rx(_cr(r, 'pinocchio_ns', 'nelu_ns'))} | {_rx(_cr(r, 'pinocchio_ns', 'nelu_v3_ns'))} | "
          f"{_ns(pv)} | {_ns(caba)} | {_rx(_cr(r, 'pv_ns', 'nelu_ns'))} | {_rx(_cr(r, 'caba_ns', 'nelu_ns'))} | "
          f"{_spread(r, ['nelu_ns', 'nelu_v3_ns', 'pinocchio_ns', 'pv_ns', 'caba_ns'])} | "
          f"{_rspread(r, [('pinocchio_ns', 'nelu_ns'), ('pinocchio_ns', 'nelu_v3_ns'), ('pv_ns', 'nelu_ns'), ('caba_ns', 'nelu_ns')])} |")
    w("")
    lwa = [r["case"] for r in recs if r["problem"] == "fd" and "pv_error" not in r]
    bad = []
    for r in recs:
        if "pv_error" in r:
            b = [f"{name} by {r[key]:.2g}" for name, key in (("pv", "pv_error"), ("constrainedABA", "caba_error")) if r[key] > 1e-6]
            if b:
                bad.append(f"{r['case']} ({', '.join(b)})")
    w("pv and constrainedABA are timed only where they can be used and agree with `constraintDynamics` to 1e-6 "
      "(their worst error over the checked states is in the records): not on impulses (they solve forward "
      "dynamics only); not with LOCAL_WORLD_ALIGNED contacts (" + ", ".join(lwa) + "): Pinocchio 3.7's "
      "`initPvSolver` implements LOCAL only (`assert(false && \"LOCAL_WORLD_ALIGNED not implemented\")`, "
      "compiled out under NDEBUG); not with Baumgarte gains, where they disagree (" + "; ".join(bad) + "): they "
      "read `contact_datas[i].c1Mc2` (the placement error) without computing it, and for Kd the contact velocity "
      "`contact1_velocity` before computing it (3-D) or not at all (6-D).")
    w("")
    # ---- derivatives
    w("### Derivatives: ns per call")
    w("")
    w("| robot | contacts | jac (rows × columns) | derivative ops | ÷ value ops | nelu -O2 | nelu v3 | Pinocchio values + derivatives "
      "| ÷ (-O2) | ÷ (v3) | time spread | ÷ spread |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in recs:
        n, v3, p = _t(r, "nelu_derivatives_ns"), _t(r, "nelu_v3_derivatives_ns"), _t(r, "pinocchio_derivatives_ns")
        o = r["o2"]
        w(f"| {r['robot']} | {r['label']} | {r['nv'] + r['nc']} × {o['jac_cols']} | {o['derivative_ops']:,} | "
          f"{_rx(o['derivative_ops'] / o['value_ops'])} | {_ns(n)} | {_ns(v3)} | {_ns(p)} | "
          f"{_rx(_cr(r, 'pinocchio_derivatives_ns', 'nelu_derivatives_ns'))} | "
          f"{_rx(_cr(r, 'pinocchio_derivatives_ns', 'nelu_v3_derivatives_ns'))} | "
          f"{_spread(r, ['nelu_derivatives_ns', 'nelu_v3_derivatives_ns', 'pinocchio_derivatives_ns'])} | "
          f"{_rspread(r, [('pinocchio_derivatives_ns', 'nelu_derivatives_ns'), ('pinocchio_derivatives_ns', 'nelu_v3_derivatives_ns')])} |")
    w("")
    # ---- agreement
    w("### Agreement with Pinocchio")
    w("")
    w(f"Checked by each copy before anything is timed, on {data['states']} random states (q, qd, tau uniform in "
      "[−1, 1], the base quaternion normalized; Baumgarte references 5 cm off the contact points), drawn again "
      "where nelu's solver refuses the contact set (`NELU_STATUS_SMALL_PIVOT`) or a pivot of Pinocchio's J M⁻¹ Jᵀ "
      "falls below 1e-5 of its largest diagonal entry (\"redrawn\": the fully constrained arm near a kinematic "
      "singularity). Worst max |nelu − Pinocchio| / max(1, max |Pinocchio|) over the states, in Pinocchio's order "
      "(nelu's angular-first 6-D rows and free-flyer halves swapped). The driver exits 1 (and the row is not timed) "
      "above 1e-9 for values and 1e-8 for derivatives, unless Pinocchio's block is the wrong one: a derivative "
      "block that disagrees is compared with five-point central differences of Pinocchio's own values (h = 1e-4); "
      "where nelu's is within 1e-5 of them and Pinocchio's off by more than 1e-3, it is recorded below as "
      "Pinocchio's defect instead. Columns of nelu's Baumgarte references (Pinocchio has no derivative with respect "
      "to `joint2_placement`): against those central differences.")
    w("")
    w("| case | redrawn | x (-O2, v3) | λ (-O2, v3) | ∂x/∂q | ∂x/∂qd | ∂x/∂τ | ∂λ/∂q | ∂λ/∂qd | ∂λ/∂τ | ∂/∂ref "
      "(differences) | Pinocchio wrong (their error against the differences; nelu's) |")
    w("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in recs:
        ck = r["check"]
        imp = r["problem"] == "impulse"
        x, l = ("v+", "Lambda") if imp else ("qdd", "lambda")
        def g(k):
            vals = [ck[k2] for k2 in (k, k + " (v3)", k + " (batch)") if k2 in ck]
            return max(vals) if vals else None
        ref = [ck[k] for k in ck if "/dref" in k]
        defects = r.get("pinocchio_defects", {})
        dtxt = "; ".join(f"{k.replace('Lambda', 'Λ').replace('lambda', 'λ')} at {d['states']} states "
                         f"({d['pinocchio_vs_differences']:.2g}; {d['nelu_vs_differences']:.1g})"
                         for k, d in defects.items() if "(v3)" not in k) or "–"
        w(f"| {r['case']} | {r['redrawn']} | {_e(ck.get(x))}, {_e(ck.get(x + ' (v3)'))} | {_e(ck.get(l))}, {_e(ck.get(l + ' (v3)'))} | "
          f"{_e(g('d' + x + '/dq'))} | {_e(g('d' + x + '/dv'))} | {_e(None if imp else g('d' + x + '/dtau'))} | "
          f"{_e(g('d' + l + '/dq'))} | {_e(g('d' + l + '/dv'))} | {_e(None if imp else g('d' + l + '/dtau'))} | "
          f"{_e(max(ref)) if ref else '–'} | {dtxt} |")
    w("")
    defect_rows = {}
    for r in recs:
        for k, d in r.get("pinocchio_defects", {}).items():
            if "(v3)" not in k:
                defect_rows.setdefault(r["case"], []).append((k, d))
    w("Defects of Pinocchio 3.7.0 found by these checks (nelu's derivatives agree with central differences of "
      "Pinocchio's own values where Pinocchio's do not):")
    w("")
    w("- `computeConstraintDynamicsDerivatives` with LOCAL_WORLD_ALIGNED contacts and Baumgarte gains that differ "
      "between components: ∂/∂q and ∂/∂qd of qdd and λ are wrong (" +
      "; ".join(f"{c}: " + ", ".join(f"{k} {d['pinocchio_vs_differences']:.2g}" for k, d in ks)
                for c, ks in defect_rows.items()) +
      ", scaled error against the differences at every state). With equal gains per component (kp 10, kd 2 on "
      "four LWA feet, checked while building this benchmark) they agree; the corrector's derivative is written "
      "for LOCAL components (constrained-dynamics-derivatives.hxx, \"Add the contribution of the corrector\"), "
      "and in LWA the gains act on the contact frame's own components, which turn with q.")
    w("- `computeImpulseDynamicsDerivatives` accumulates into `data.dvc_dq` without clearing it: from the second "
      "call with one `Data` on, its ∂v⁺/∂q and ∂Λ/∂q are wrong on a floating base (the Mini Cheetah's impulse "
      "cases: scaled errors 0.3–2.7 at 49 of 50 states before the driver cleared it; the first call, and fixed-base "
      "robots, were right). The driver clears it before each call, timed calls included. Its `dvimpulse_partial_dv` "
      "is ∂(v⁺ − v⁻)/∂v⁻ (a convention: the identity is added before comparing).")
    w("- `pv` and `constrainedABA` with Baumgarte gains: values wrong (table above).")
    w("")
    if failed:
        w("Not timed (the check failed): " + "; ".join(f"{r['case']}: {r['error']}" for r in failed) + ".")
        w("")
    # ---- horizon
    hz = [r for r in recs if "horizon_nelu_v3_batch_ns" in r.get("times", {})]
    if hz:
        w("### Horizon: the batch form of the derivatives, ns per knot")
        w("")
        w(f"The cases marked `horizon` are compiled `nelu compile --batch` as well (the `nelu_c_v3` compile: `NAME.cpp` is "
          "the same with and without it), and its `nelu_c_v3_batch.cpp` built `g++ -O2 -march=x86-64-v3` (AVX2 and FMA: "
          "4 lanes of double; [batch.md](batch.md)). The knots are the first "
          f"{hz[0]['horizon_knots']} checked states, in state-major `q`, `qd` and `in` arrays prepared before the timed "
          "calls. Three more contenders in the same alternating rounds of the same process as the rows above: one call of "
          "`nelu_c_v3_derivatives_batch(50, q, qd, in, out, jac, status)` (out and jac of all 50 knots written); 50 calls "
          "of the scalar `nelu_c_v3_derivatives` on the same knots; 50 calls of Pinocchio's value + derivative call of the "
          "derivative rows (`constraintDynamics` + `computeConstraintDynamicsDerivatives`, one `Data`, each knot's own "
          "contact models). Each is the time of a whole horizon over 50; median over the copies, ÷ the median of the "
          "copies' ratios, spreads as above. Before anything is timed, each copy calls the batch form once on all "
          f"{hz[0]['states']} checked states and compares every row of out and jac with the scalar `nelu_c_v3_derivatives` "
          "at that state (out entry by entry, |batch − scalar| / max(1, |scalar|); jac row by row, max |batch − scalar| / "
          "max(1, max |scalar|) in the row, one output's gradient; the worst over the states below; exit 1 above 1e-12), "
          "and then each row with Pinocchio as the scalar forms are (included in the derivative columns of the agreement "
          "table). With `-march=x86-64-v3`, g++ contracts a * b + c into fused multiply-adds differently in the scalar "
          "function and the lanes, so rows differ by rounding (batch.md, \"Exactness\").")
        w("")
        w("| robot | contacts | knots | nelu batch (v3) | nelu scalar (v3), 50 calls | Pinocchio, 50 calls | ÷ batch | "
          "batch over scalar | time spread | ÷ spread | batch vs scalar: rows bit for bit; out; jac | "
          "g++ -O2 -march=x86-64-v3 of the batch form (s) |")
        w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
        for r in hz:
            b, v = r.get("batch_check", {}), r["v3"]
            w(f"| {r['robot']} | {r['label']} | {r['horizon_knots']} | {_ns(_t(r, 'horizon_nelu_v3_batch_ns'))} | "
              f"{_ns(_t(r, 'horizon_nelu_v3_ns'))} | {_ns(_t(r, 'horizon_pinocchio_ns'))} | "
              f"{_rx(_cr(r, 'horizon_pinocchio_ns', 'horizon_nelu_v3_batch_ns'))} | "
              f"{_rx(_cr(r, 'horizon_nelu_v3_ns', 'horizon_nelu_v3_batch_ns'))} | "
              f"{_spread(r, ['horizon_nelu_v3_batch_ns', 'horizon_nelu_v3_ns', 'horizon_pinocchio_ns'])} | "
              f"{_rspread(r, [('horizon_pinocchio_ns', 'horizon_nelu_v3_batch_ns'), ('horizon_nelu_v3_ns', 'horizon_nelu_v3_batch_ns')])} | "
              f"{b.get('bit_for_bit', '–')} of {b.get('states', '–')}; {_e(b.get('out_vs_scalar'))}; {_e(b.get('jac_vs_scalar'))} | "
              f"{v['batch_build_s']:.1f} ({v['batch_build_cpu_s']:.1f}){' *' if v.get('batch_reused') else ''} |")
        w("")
    # ---- targets
    w("### Targets (issue 27)")
    w("")

    def rows(pred):
        return [r for r in recs if pred(r)]

    def fmt(rs, key_n, key_p, need):
        xs = [(r["case"], _cr(r, key_p, key_n)) for r in rs]
        xs = [(c, x) for c, x in xs if x is not None]
        if not xs:
            return "–", "–"
        met = sum(x >= need for _, x in xs)
        return (", ".join(f"{x:.2f}×" for _, x in xs), f"{met} of {len(xs)}" + ("" if met == len(xs) else
                f"; worst {min(x for _, x in xs):.2f}× ({min(xs, key=lambda cx: cx[1])[0]})"))

    legged_fd = rows(lambda r: r["problem"] == "fd" and r["case"].startswith(("minicheetah", "humanoid")))
    imp = rows(lambda r: r["problem"] == "impulse")
    w("| target | rows | measured: -O2 (v3) | met |")
    w("|---|---|---|---|")
    for title, rs, kn, kp, need in (
            ("values ≥ 4× `constraintDynamics` (mu = 0), quadruped with 4 points and humanoid with 2 soles", legged_fd,
             "nelu_ns", "pinocchio_ns", 4),
            ("derivatives ≥ 3× `constraintDynamics` + `computeConstraintDynamicsDerivatives`, same robots", legged_fd,
             "nelu_derivatives_ns", "pinocchio_derivatives_ns", 3),
            ("impulses ≥ 4× `impulseDynamics`", imp, "nelu_ns", "pinocchio_ns", 4),
            ("impulse derivatives ≥ 3× `impulseDynamics` + `computeImpulseDynamicsDerivatives`", imp,
             "nelu_derivatives_ns", "pinocchio_derivatives_ns", 3)):
        m, met = fmt(rs, kn, kp, need)
        m3, met3 = fmt(rs, kn.replace("nelu_", "nelu_v3_"), kp, need)
        w(f"| {title} | {', '.join(r['case'] for r in rs)} | {m} (v3: {m3}) | -O2: {met}; v3: {met3} |")
    for peer, key in (("pv", "pv_ns"), ("constrainedABA", "caba_ns")):
        rs = rows(lambda r: key in r.get("times", {}))
        m, met = fmt(rs, "nelu_ns", key, 1)
        w(f"| values faster than `{peer}` (where it is usable and agrees) | {', '.join(r['case'] for r in rs) or '–'} | "
          f"{m} | {met} |")
    ratios = [(r["case"], r["o2"]["derivative_ops"] / r["o2"]["value_ops"]) for r in legged_fd + imp]
    met = sum(x <= 5 for _, x in ratios)
    w(f"| derivative ops ≤ 5× the value solver's | {', '.join(c for c, _ in ratios)} | "
      f"{', '.join(f'{x:.1f}×' for _, x in ratios)} | {met} of {len(ratios)} |")
    # the same with the columns in lanes, counted per instruction at W = 4 (AVX2 double) where the
    # record has the count (runs since it was recorded)
    lanes4 = [(r["case"], r["o2"]["lane_ops_w4"] / r["o2"]["value_ops"]) for r in legged_fd + imp if "lane_ops_w4" in r["o2"]]
    if lanes4:
        met = sum(x <= 5 for _, x in lanes4)
        w(f"| the same, the columns in lanes counted per instruction (W = 4) | {', '.join(c for c, _ in lanes4)} | "
          f"{', '.join(f'{x:.1f}×' for _, x in lanes4)} | {met} of {len(lanes4)} |")
    hum = rows(lambda r: r["case"].startswith("humanoid") and r["problem"] == "fd")
    if hum:
        tt = [(r["case"], r["o2"]["compile_s"] + r["o2"]["build_s"], r["o2"]["compile_cpu_s"] + r["o2"]["build_cpu_s"],
               r["o2"].get("reused")) for r in hum]
        met = sum(t < 60 for _, t, _, _ in tt)
        w(f"| build: `nelu compile` + `g++ -O2` of the humanoid's contact derivatives under 60 s | "
          f"{', '.join(c for c, *_ in tt)} | " + ", ".join(f"{t:.0f} s (CPU {cpu:.0f} s){' *' if re else ''}"
                                                          for _, t, cpu, re in tt) + f" | {met} of {len(tt)} |")
    quad = [r for r in hz if r["case"].startswith("minicheetah")]
    if quad:
        xs = [(r["case"], _cr(r, "horizon_pinocchio_ns", "horizon_nelu_v3_batch_ns")) for r in quad]
        met = sum(x >= 10 for _, x in xs)
        short = f"; short by {10 / min(x for _, x in xs):.2f}× (the worst)" if met < len(xs) else ""
        w("| horizon: batch form of the quadruped's contact derivatives, 50 knots, ≥ 10× Pinocchio per knot (AVX2, double) | "
          f"{', '.join(c for c, _ in xs)} | v3 batch: " +
          ", ".join(f"{_ns(_t(r, 'horizon_nelu_v3_batch_ns'))} ns per knot against {_ns(_t(r, 'horizon_pinocchio_ns'))}: {x:.2f}×"
                    for r, (_, x) in zip(quad, xs)) +
          f" | {met} of {len(xs)}{short} |")
    else:
        w("| horizon: batch form of the quadruped's contact derivatives, 50 knots, ≥ 10× Pinocchio per knot | – | not "
          "measured by this run | – |")
    w("")
    w("Build of the generated solvers (`nelu compile` includes its verification; wall time, CPU time in parentheses; "
      f"{data['jobs']} parallel jobs: all nelu compiles {data['compile_wall_s']:.0f} s, all g++ {data['build_wall_s']:.0f} s "
      "of wall time; * unchanged since an earlier run, that run's time):")
    w("")
    w("| case | ordering | value ops | derivative ops | C++ (MB) | nelu compile (s) | g++ -O2 (s) | g++ -O2 -march=x86-64-v3 (s) |")
    w("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in data["records"]:
        o, v = r["o2"], r["v3"]
        w(f"| {r['case']} | {o['ordering']} | {o['value_ops']:,} | {o['derivative_ops']:,} | {o['cpp_bytes'] / 1e6:.2f} | "
          f"{o['compile_s']:.1f} ({o['compile_cpu_s']:.1f}) | {o['build_s']:.1f} ({o['build_cpu_s']:.1f}){' *' if o.get('reused') else ''} | "
          f"{v['build_s']:.1f} ({v['build_cpu_s']:.1f}){' *' if v.get('reused') else ''} |")
    return L


if __name__ == "__main__":
    main()
