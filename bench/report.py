#!/usr/bin/env python3
"""report.py: docs/bench.md and its SVG plots from the benchmark's JSON files (scripts/bench.sh).

  report.py --collect-sizes OBJECT_LIST --sizes-out code_size.json
      code size of every generated solver object of the build (bench/solver_objects.txt, lines
      "NAME OBJECT"): bytes of the NAME and NAME_f functions (nm -S), of the .text and .rodata
      sections (size -A), and the operation count of its manifest.
  report.py --results results.json --sizes code_size.json --scaling scaling.json [--large large.json --large-results large_results.json]
            [--derivatives-pinocchio derivatives_pinocchio.json] [--batch batch.json]
            [--contacts-pinocchio contacts_pinocchio.json] --out bench.md --plots DIR
      the report; missing input files leave their sections out.
  report.py --derivatives-pinocchio derivatives_pinocchio.json --update-doc derivatives.md
      the tables of scripts/derivatives_pinocchio.sh, written between the markers of derivatives.md.

Only the Python standard library: the plots are SVG written here.
"""
import argparse
import json
import math
import os
import statistics
from collections import OrderedDict

from common import SMALL_ROBOTS, arithmetic_ops, run

ROBOTS = ["ur5e", "panda_gaz2019", "quadruped_minicheetah", "quadruped_minicheetah_floating",
          "iiwa", "kinova", "ur5", "solo12", "solo12_floating", "chain7", "chain30", "chain100"]
ID_ENGINES = ["generated_double", "generated_float", "reference", "mujoco_rne", "kdl_rne", "dart", "pinocchio"]
FD_ENGINES = ["generated_double", "generated_float", "reference", "mujoco_forward", "mujoco_crb", "kdl_rne", "dart",
              "pinocchio"]
PEERS = {"ID": ["mujoco_rne", "kdl_rne", "dart", "pinocchio"],
         "FD": ["mujoco_forward", "mujoco_crb", "kdl_rne", "dart", "pinocchio"]}
RESPONSE_ENGINES = ["generated_double", "generated_float", "reference", "unit_force", "dense"]
LABEL = {"generated_double": "generated double", "generated_float": "generated float",
         "generated_zero_fx_double": "generated f^x = 0 double", "generated_zero_fx_float": "generated f^x = 0 float",
         "unit_force": "unit-force (eUFM)", "dense": "dense",
         "reference": "reference", "mujoco_rne": "MuJoCo mj_rne", "mujoco_forward": "MuJoCo mj_forward",
         "mujoco_crb": "MuJoCo CRB+LDL", "kdl_rne": "KDL", "dart": "DART", "pinocchio": "Pinocchio"}
COLORS = {"generated_double": "#1f77b4", "generated_float": "#6baed6", "reference": "#7f7f7f",
          "generated_zero_fx_double": "#17becf", "generated_zero_fx_float": "#9edae5",
          "unit_force": "#bcbd22", "dense": "#ff7f0e",
          "mujoco_rne": "#d62728", "mujoco_forward": "#d62728", "mujoco_crb": "#ff9896",
          "kdl_rne": "#2ca02c", "dart": "#9467bd", "pinocchio": "#8c564b"}


# ------------------------------------------------------------------------------------------------
# code size

def collect_sizes(object_list, out):
    build_bench = os.path.dirname(os.path.abspath(object_list))
    sizes = OrderedDict()
    with open(object_list) as f:
        for line in f:
            if not line.strip():
                continue
            name, obj = line.split(None, 1)
            obj = obj.strip()
            # the entry point NAME (NAME_f) and the functions it calls: NAME_impl<double> and, in
            # multi-part solvers, NAME_partK<double> (<float>)
            by_scalar = {"double": 0, "float": 0}
            for l in run(["nm", "-S", "-C", "--defined-only", obj]).stdout.splitlines():
                parts = l.split(None, 3)
                if len(parts) < 4 or parts[2] not in "Tt":
                    continue
                size, sym = int(parts[1], 16), parts[3]
                if sym == name or "<double>" in sym:
                    by_scalar["double"] += size
                elif sym == name + "_f" or "<float>" in sym:
                    by_scalar["float"] += size
            text = rodata = 0
            for l in run(["size", "-A", obj]).stdout.splitlines():
                parts = l.split()
                if len(parts) >= 2 and parts[0].startswith(".text"):
                    text += int(parts[1])
                if len(parts) >= 2 and parts[0].startswith(".rodata"):
                    rodata += int(parts[1])
            with open(os.path.join(build_bench, "nelu_generated", name + ".json")) as mf:
                ops = json.load(mf)["ops"]
            sizes[name] = {"double_bytes": by_scalar["double"], "float_bytes": by_scalar["float"],
                           "text_bytes": text, "rodata_bytes": rodata,
                           "ops": arithmetic_ops(ops), "sincos": ops["sincos"], "sqrt": ops["sqrt"]}
    with open(out, "w") as f:
        json.dump(sizes, f, indent=1)
        f.write("\n")


# ------------------------------------------------------------------------------------------------
# SVG

def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def log_ticks(lo, hi):
    ticks = []
    e = math.floor(math.log10(lo))
    while 10 ** e <= hi * 1.0001:
        for m in (1, 2, 5):
            v = m * 10 ** e
            if lo <= v <= hi:
                ticks.append(v)
        e += 1
    return ticks


def fmt_ns(v):
    if v >= 1e6:
        return f"{v / 1e6:g} ms"
    if v >= 1e3:
        return f"{v / 1e3:g} µs"
    return f"{v:g} ns"


def bar_chart(path, title, groups, engines, values, unit_fmt=fmt_ns):
    """Horizontal grouped bars on a log axis: values[(group, engine)] (missing ones left out)."""
    present = [v for v in values.values() if v]
    if not present:
        return
    lo = 10 ** math.floor(math.log10(min(present)))
    hi = 10 ** math.ceil(math.log10(max(present)))
    bar_h, gap, left, right, top = 9, 12, 230, 30, 50
    rows = []
    for g in groups:
        es = [e for e in engines if values.get((g, e))]
        if es:
            rows.append((g, es))
    height = top + sum(len(es) * bar_h + gap for _, es in rows) + 60
    width = 820
    plot_w = width - left - right

    def x(v):
        return left + plot_w * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{esc(title)}</text>']
    y = top
    for t in log_ticks(lo, hi):
        out.append(f'<line x1="{x(t):.1f}" y1="{top - 5}" x2="{x(t):.1f}" y2="{height - 50}" stroke="#ddd"/>')
        out.append(f'<text x="{x(t):.1f}" y="{height - 36}" text-anchor="middle">{esc(unit_fmt(t))}</text>')
    out.append(f'<text x="{left + plot_w / 2}" y="{height - 18}" text-anchor="middle">median time per call (log scale; shorter is faster)</text>')
    for g, es in rows:
        out.append(f'<text x="{left - 8}" y="{y + len(es) * bar_h / 2 + 4:.1f}" text-anchor="end" font-size="12">{esc(g)}</text>')
        for e in es:
            v = values[(g, e)]
            out.append(f'<rect x="{left}" y="{y}" width="{max(1.0, x(v) - left):.1f}" height="{bar_h - 1}" fill="{COLORS.get(e, "#333")}">'
                       f'<title>{esc(g)} {esc(LABEL.get(e, e))}: {v:.0f} ns</title></rect>')
            y += bar_h
        y += gap
    # legend
    lx, ly = left + 10, top - 22
    for e in engines:
        if any(values.get((g, e)) for g in groups):
            out.append(f'<rect x="{lx}" y="{ly}" width="10" height="10" fill="{COLORS.get(e, "#333")}"/>')
            out.append(f'<text x="{lx + 14}" y="{ly + 9}">{esc(LABEL.get(e, e))}</text>')
            lx += 22 + 6.5 * len(LABEL.get(e, e))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def line_chart(path, title, xlabel, ylabel, series, yfmt=lambda v: f"{v:g}"):
    """Log-log lines: series = [(label, color, dash, [(x, y), ...])]."""
    pts = [p for _, _, _, s in series for p in s if p[1] and p[1] > 0]
    if not pts:
        return
    xlo, xhi = min(p[0] for p in pts), max(p[0] for p in pts)
    ylo = 10 ** math.floor(math.log10(min(p[1] for p in pts)))
    yhi = 10 ** math.ceil(math.log10(max(p[1] for p in pts)))
    width, height, left, right, top, bottom = 720, 440, 80, 200, 40, 50
    pw, ph = width - left - right, height - top - bottom

    def X(v):
        return left + pw * (math.log10(v) - math.log10(xlo)) / max(1e-9, math.log10(xhi) - math.log10(xlo))

    def Y(v):
        return top + ph * (1 - (math.log10(v) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo)))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left + pw / 2}" y="20" text-anchor="middle" font-size="14">{esc(title)}</text>',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>']
    for t in sorted({p[0] for p in pts}):
        out.append(f'<line x1="{X(t):.1f}" y1="{top}" x2="{X(t):.1f}" y2="{top + ph}" stroke="#eee"/>')
        out.append(f'<text x="{X(t):.1f}" y="{top + ph + 15}" text-anchor="middle">{t:g}</text>')
    for t in log_ticks(ylo, yhi):
        out.append(f'<line x1="{left}" y1="{Y(t):.1f}" x2="{left + pw}" y2="{Y(t):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 5}" y="{Y(t) + 4:.1f}" text-anchor="end">{esc(yfmt(t))}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 12}" text-anchor="middle">{esc(xlabel)}</text>')
    out.append(f'<text x="16" y="{top + ph / 2}" text-anchor="middle" transform="rotate(-90 16 {top + ph / 2})">{esc(ylabel)}</text>')
    ly = top + 5
    for label, color, dash, s in series:
        s = [p for p in s if p[1] and p[1] > 0]
        if not s:
            continue
        d = " ".join(f"{X(a):.1f},{Y(b):.1f}" for a, b in s)
        da = ' stroke-dasharray="5,3"' if dash else ""
        out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="2"{da}/>')
        for a, b in s:
            out.append(f'<circle cx="{X(a):.1f}" cy="{Y(b):.1f}" r="3" fill="{color}"><title>{esc(label)} n={a:g}: {b:g}</title></circle>')
        out.append(f'<line x1="{left + pw + 10}" y1="{ly + 5}" x2="{left + pw + 35}" y2="{ly + 5}" stroke="{color}" stroke-width="2"{da}/>')
        out.append(f'<text x="{left + pw + 40}" y="{ly + 9}">{esc(label)}</text>')
        ly += 16
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# ------------------------------------------------------------------------------------------------
# the report

def load(path):
    if path and os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return None


def medians(results):
    """{(problem, robot, engine): median cpu_time in ns}, and the largest coefficient of variation."""
    med, cv = {}, {}
    for b in results["benchmarks"]:
        if b.get("run_type") != "aggregate":
            continue
        problem, robot, engine = b["run_name"].split("/")
        scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        if b["aggregate_name"] == "median":
            med[(problem, robot, engine)] = b["cpu_time"] * scale
        if b["aggregate_name"] == "cv":
            cv[(problem, robot, engine)] = b["cpu_time"]
    return med, cv


def ns(v):
    return "–" if v is None else (f"{v:,.0f}" if v >= 100 else f"{v:.1f}")


def ratio(a, b):
    return None if not a or not b else a / b


def rx(v):
    return "–" if v is None else f"{v:.2f}×"


def yes(ok):
    return "–" if ok is None else ("yes" if ok else "**no**")


def ops_of(sizes, solver):
    return sizes.get(solver, {}).get("ops") if sizes else None


def zero_fx_section(w, med, sizes):
    """Generated solvers without external wrenches, beside the presets and MuJoCo's f^x = 0 calls."""
    if not any((p, r, "generated_zero_fx_double") in med for p in ("ID", "FD") for r in ROBOTS):
        return
    w("## Without external wrenches: like-for-like with MuJoCo")
    w("")
    w("MuJoCo's `mj_rne` and the minimal CRB + LDL sequence take no external wrenches, while the `id` and `fd` "
      "presets take every link's f^x (6 inputs per link, added into the Newton–Euler equations). The f^x = 0 "
      "solvers are compiled from `bench/specs/id_zero_fx.yaml` and `fd_zero_fx.yaml` (`external_wrenches: zero`) "
      "and compute exactly what those MuJoCo calls compute; they are checked against the reference at f^x = 0. "
      "Operations: mul + add + div of the manifests. Same run, same states as above. The wrench inputs are a "
      "few per cent of the operations; a larger difference in time between the two solvers of one robot is a "
      "placement effect (where the code and data of each solver land in this binary), not the f^x: timed with "
      "`bench/scaling_driver.cpp` from the same object files, such pairs come out within about 10 % of "
      "each other, sometimes in the other order.")
    w("")
    for problem, peer, peer_label, suffix in (("ID", "mujoco_rne", "MuJoCo mj_rne", "id"),
                                             ("FD", "mujoco_crb", "MuJoCo CRB+LDL", "fd")):
        w(f"**{'Inverse' if problem == 'ID' else 'Forward'} dynamics** (median ns per call):")
        w("")
        w(f"| robot | ops with f^x | ops f^x = 0 | generated double (f^x) | generated f^x = 0 double | generated f^x = 0 float "
          f"| {peer_label} (f^x = 0) | with f^x / f^x = 0 (time) | {peer_label} / generated f^x = 0 | double / float (f^x = 0) |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in ROBOTS:
            g0 = med.get((problem, r, "generated_zero_fx_double"))
            if g0 is None:
                continue
            g, f0, mj = (med.get((problem, r, e)) for e in ("generated_double", "generated_zero_fx_float", peer))
            o, o0 = ops_of(sizes, f"{r}_{suffix}"), ops_of(sizes, f"{r}_{suffix}0")
            w(f"| {r} | {'–' if o is None else f'{o:,}'} | {'–' if o0 is None else f'{o0:,}'} | {ns(g)} | {ns(g0)} | {ns(f0)} | "
              f"{ns(mj)} | {rx(ratio(g, g0))} | {rx(ratio(mj, g0))} | {rx(ratio(g0, f0))} |")
        w("")


def responses_section(w, results, med, sizes, plots, rel):
    """The compiled problem kinds osim and iwim against the references and the dense route."""
    ctx = results["context"]
    cases = []  # (kind, case) in the order of the run
    for b in results["benchmarks"]:
        kind, case, _ = b["run_name"].split("/")
        if kind in ("OSIM", "IWIM") and (kind, case) not in cases:
            cases.append((kind, case))
    if not cases:
        return
    info = {}  # (filled below) then the cases ordered osim first, by size (the run interleaves them)
    for (kind, case) in cases:
        text = ctx.get(f"response/{kind}/{case}", "")
        fields = text.split()
        d = {"solver": fields[0] if fields else None}
        for f in fields[1:]:
            k, _, v = f.partition("=")
            d[k] = int(v)
        info[(kind, case)] = d
    cases.sort(key=lambda kc: (kc[0] != "OSIM", info[kc].get("nv", 0), info[kc].get("nout", 0), kc[1]))
    w("## Seed algorithms: osim and iwim")
    w("")
    w("The compiled problem kinds of [docs/seed-algorithms.md](seed-algorithms.md) against the seed algorithms' "
      "reference implementations and the dense route, in the same run and process as the tables above "
      "(`bench/responses.cpp`), on 16 random states (the same seed; q and qd only, no inputs). The generated "
      "solvers take no inputs (`NIN` 0) and write the whole result.")
    w("")
    w("- **OSIM** (Chang & Khatib): Lambda^-1 = J M^-1 J^T of two 6-DoF operational points, one at each hand of "
      "`robots/humanoid_winter.urdf` (24 DoF; `bench/specs/humanoid_hands_osim.yaml`: 0.45 m below each forearm's "
      "origin, frames with the forearm's axes), fixed base and floating base (nv 30); out = 12 × 12, row major. "
      "*reference*: `nelu::osim_inverse` (runtime/include/nelu/osim.hpp, Table 1 steps 1–5, `PointAxes::Link`). "
      "*dense*: `nelu::crba`, `nelu::body_jacobian` of each hand moved to the point, Eigen `LLT`, "
      "Y = L^-1 J^T in place, Lambda^-1 = Y^T Y.")
    w("- **IWIM** (Kroeg, Gattringer & Müller, their Table 1 setting): a DH chain (`nelu robot gen chain --links n "
      "--transforms dh --seed 1`), one input (the middle joint's torque) and fully actuated; out = [qdd_0; M^-1 B "
      "column by column], qdd_0 the free acceleration (tau = 0, gravity and velocity terms included). "
      "*reference*: `nelu::iwim`, the implicit inversion method (runtime/include/nelu/iwim.hpp); *unit-force*: "
      "`nelu::iwim_unit_force`, the extended unit-force method (m + 1 ABA calls); *dense*: `nelu::crba`, h by "
      "`nelu::nonlinear_effects` (RNEA at qdd = 0), Eigen `LDLT`, [qdd_0, M^-1 B] = M^-1 [-h, B] in place.")
    w("- The references are nelu's clarity-first implementations (they allocate their temporaries, as RNEA and ABA "
      "above do); the dense route keeps its Eigen matrices between calls but CRBA, RNEA and the body Jacobians are "
      "the reference ones. Operation counts of the references and the dense route are in "
      "[docs/seed-algorithms.md](seed-algorithms.md); ops here are the generated solver's (manifest).")
    w("")
    w("Median ns per call:")
    w("")
    w("| problem | case | nv | outputs | ops (generated) | generated double | generated float | reference | unit-force | dense "
      "| reference / generated | dense / generated | unit-force / generated | double / float |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (kind, case) in cases:
        d = info[(kind, case)]
        g, gf, ref, uf, dense = (med.get((kind, case, e)) for e in RESPONSE_ENGINES)
        o = ops_of(sizes, d.get("solver"))
        label = case
        if kind == "IWIM" and "inputs" in d:
            label += f" ({d['inputs']} input{'s' if d['inputs'] != 1 else ''})"
        w(f"| {kind.lower()} | {label} | {d.get('nv', '–')} | {d.get('nout', '–')} | {'–' if o is None else f'{o:,}'} | "
          f"{ns(g)} | {ns(gf)} | {ns(ref)} | {ns(uf)} | {ns(dense)} | {rx(ratio(ref, g))} | {rx(ratio(dense, g))} | "
          f"{rx(ratio(uf, g))} | {rx(ratio(g, gf))} |")
    w("")
    w(f"![osim and iwim]({rel}/responses.svg)")
    w("")
    groups = [f"{k.lower()} {c}" for k, c in cases]
    bar_chart(os.path.join(plots, "responses.svg"), "osim and iwim: median time per call", groups, RESPONSE_ENGINES,
              {(f"{k.lower()} {c}", e): med.get((k, c, e)) for k, c in cases for e in RESPONSE_ENGINES})
    w("Agreement, checked before anything is timed, with the dense route evaluated in long double at the same "
      "states (the run stops if a double-precision contender fails): osim, max |x − x*| / max |x*| over the "
      "matrix (tolerance 1e-9); iwim, the same per column of [qdd_0, M^-1 B] (tolerance 1e-8) and, "
      "in brackets, the backward error max over columns of |M x − b| / (|M| |x| + |b|) (infinity norms, "
      "long double; accepted at 1e-12 when the forward check fails, since M of a long chain is ill-conditioned). "
      "Float: gross errors only (1e-2 forward, or 1e-5 backward). The last column says how well the truth "
      "itself is known: its distance, by the same measure, from the reference recursion (`osim_inverse` / "
      "`iwim`) run in long double; errors at or below that level are the truth's own uncertainty, not the "
      "contender's.")
    w("")
    w("| problem | case | " + " | ".join(LABEL.get(e, e) for e in RESPONSE_ENGINES) +
      " | truth vs reference recursion, both long double |")
    w("|---|---|" + "---|" * (len(RESPONSE_ENGINES) + 1))
    for (kind, case) in cases:
        cells = []
        for e in RESPONSE_ENGINES:
            f = ctx.get(f"check/{kind}/{case}/{e}")
            b = ctx.get(f"check_backward/{kind}/{case}/{e}")
            cells.append("–" if f is None else (f + (f" ({b})" if b else "")))
        w(f"| {kind.lower()} | {case} | " + " | ".join(cells) + f" | {ctx.get(f'truth_spread/{kind}/{case}', '–')} |")
    w("")


LARGE_LABEL = {"panda_gaz2019": "Panda (7-DoF arm)", "ur5e": "UR5e", "quadruped_minicheetah": "Mini Cheetah",
               "quadruped_minicheetah_floating": "Mini Cheetah", "humanoid_winter": "humanoid_winter",
               "humanoid_winter_floating": "humanoid_winter", "icub_reduced": "iCub (icub_reduced)",
               "icub_reduced_floating": "iCub (icub_reduced)"}


def large_label(robot):
    base = robot[:-len("_floating")] if robot.endswith("_floating") else robot
    if base.startswith("tree") and base[4:].isdigit():
        return f"tree {base[4:]}"
    return LARGE_LABEL.get(robot, robot)


def large_section(w, large, large_results, results):
    """docs/bench.md "Large robots" from bench/large.py's JSON and the large-robot benchmark run
    (scripts/bench.sh --large)."""
    med, cv = medians(large_results)
    recs = [dict(r, ns={e: v for (p, rb, e), v in med.items() if p == r["problem"] and rb == r["robot"]})
            for r in large["records"]]
    by = {(r["robot"], r["problem"]): r for r in recs}
    ctx = large_results["context"]
    reps = max((b.get("repetitions", 0) for b in large_results["benchmarks"]), default=0)

    def gen(r):
        return r["ns"].get("generated_double")

    def ops_ns(r):
        return r["ops"] / gen(r) if gen(r) else None

    def peer(r):
        ps = [(v, e) for e, v in r["ns"].items() if e in PEERS[r["problem"]]]
        return min(ps) if ps else (None, None)

    w("## Large robots")
    w("")
    w("Generated by `bash scripts/bench.sh --large` (issue 13, part 3), a run of its own: `nelu_bench` built with "
      "`-DNELU_BENCH_LARGE=ON` (CMake's Release flags, as above), which adds `robots/humanoid_winter.urdf`, "
      "`../shared/robots/icub_reduced.urdf` (when that directory is present) and binary trees "
      "(`nelu robot gen tree --links n --branching 2 --seed 1`, general rotations), each with a fixed and a "
      "floating base (a floating tree has the same n bodies with its first body as the floating root, nv = n + 5: "
      "`nelu robot gen --no-base` leaves out the generator's massless base link, which would leave forward dynamics "
      "singular); the `id` and `fd` presets (every link's f^x an input). "
      f"Machine: {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs (shared with other work while measuring), "
      f"{ctx.get('date', '')}; peers: {ctx.get('peers', 'none')}. The iCub's URDF names mesh files that are not "
      "shipped: the peers load it without its `<visual>` and `<collision>` meshes (which take no part in ID or FD).")
    w("")
    w(f"- **ns/call**: median CPU time of {reps} repetitions, interleaved in random order, "
      "of the generated double solver, the reference RNEA / ABA and the peers (the calls of [What is timed](#what-is-timed)), "
      "all in one `nelu_bench` run; the small robots are timed again in that run so that every ratio compares "
      f"numbers of one run (largest coefficient of variation {max(cv.values()) * 100:.1f} %, median "
      f"{sorted(cv.values())[len(cv) // 2] * 100:.1f} %). **ops**: mul + add + div of the manifest; **ops/ns ÷ Panda's** divides by the Panda's "
      "ops/ns for the same problem (ID or FD).")
    w("- **instructions/call** (cachegrind, steady state), **code** (machine-code bytes of the double entry point and "
      "the functions it calls, `nm -S`) and **stack** (the -fstack-usage frames of those functions, summed: an upper "
      "bound of the stack a call takes) come from `scripts/profile.sh --no-time` (docs/large-robots.md) on the "
      "generated .cpp that `nelu_bench` was built from, compiled with `g++ -O2`; g++ 12 emits the same instructions "
      "at -O3 for this code (docs/large-robots.md).")
    w("- **nelu compile**: wall time of `nelu compile ROBOT --problem id|fd [--floating-base]` (double and float entry "
      "points, as the benchmark builds them; it includes the compiler's own verification on 26 states); "
      "**g++ -O2**: wall time of `g++ -O2 -c` of that .cpp (both entry points); CPU time (user + sys) in parentheses, "
      f"which is what the shared machine (load average {', '.join(f'{x:.1f}' for x in large['load_avg'])} at the end) "
      "distorts least. One run each.")
    w("- **reference / gen.** and **fastest peer / gen.**: time of the reference (of the fastest peer) divided by the "
      "generated solver's, in the same run; peers as in the main tables (MuJoCo's `mj_rne` and CRB+LDL take no f^x).")
    missing = sorted((k.split("/")[1], k.split("/")[2], v) for k, v in ctx.items() if k.startswith("unavailable/"))
    if missing:
        w("- Peers not run: " + "; ".join(f"{e} on {r}: {' '.join(v.split())}" for r, e, v in missing) + ".")
    w("")
    w("| robot | base | problem | nv | ops | ns/call | ops/ns | ops/ns ÷ Panda's | instructions/call | instr./op "
      "| I1 misses/call | code (B) | stack (B) | nelu compile (s) | g++ -O2 (s) | reference / gen. | fastest peer / gen. |")
    w("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for problem in ("ID", "FD"):
        panda = by.get(("panda_gaz2019", problem))
        for r in (x for x in recs if x["problem"] == problem):
            g = gen(r)
            rel_panda = ratio(ops_ns(r), ops_ns(panda)) if panda else None
            pv, pe = peer(r)
            peer_txt = f"{rx(ratio(pv, g))} ({LABEL.get(pe, pe)})" if pv else "–"
            w(f"| {large_label(r['robot'])} | {'floating' if r['floating'] else 'fixed'} | {problem} | {r['nv']} | "
              f"{r['ops']:,} | {ns(g)} | {ops_ns(r):.2f} | {rel_panda:.2f} | {r['instructions']:,.0f} | "
              f"{r['instructions'] / r['ops']:.2f} | {max(0.0, r['I1_misses']):,.0f} | {r['code_bytes']:,} | {r['stack_bytes']:,} | "
              f"{r['compile_s']:.2f} ({r['compile_cpu_s']:.2f}) | {r['build_s']:.1f} ({r['build_cpu_s']:.1f}) | {rx(ratio(r['ns'].get('reference'), g))} | {peer_txt} |")
    w("")

    # --- targets of issue 13
    humanoids = [h for h in ("icub_reduced_floating", "humanoid_winter_floating") if (h, "ID") in by]
    largest = humanoids[:1]
    trees = [t for t in ("tree100", "tree100_floating") if (t, "ID") in by]
    w("### Targets (issue 13)")
    w("")
    w("Ratios of medians of the run above. The issue's \"50-DoF floating humanoid\" is the largest humanoid here: "
      "the iCub with a floating base (nv = 35; humanoid_winter with a floating base has nv = 30), or humanoid_winter "
      "when `../shared/robots` is absent.")
    w("")
    w("| target | solver | measured | met |")
    w("|---|---|---|---|")
    rows = []
    panda = {p: by.get(("panda_gaz2019", p)) for p in ("ID", "FD")}
    for robot in largest + trees:
        for problem in ("ID", "FD"):
            r = by[(robot, problem)]
            k = ratio(ops_ns(panda[problem]), ops_ns(r))
            rows.append(("ops/ns within 1.3× of the Panda's (Panda's ops/ns ÷ this ≤ 1.3)",
                         f"{large_label(robot)} {'floating' if r['floating'] else 'fixed'} {problem}",
                         f"{ops_ns(r):.2f} vs {ops_ns(panda[problem]):.2f} ops/ns: {k:.2f}×", k <= 1.3,
                         f"gap {k / 1.3:.2f}×"))
    for robot in humanoids:
        for problem, need in (("ID", 4.0), ("FD", 3.0)):
            r = by[(robot, problem)]
            g = gen(r)
            pv, pe = peer(r)
            for what, v in ((f"≥ {need:g}× faster than the fastest peer", pv), (f"≥ {need:g}× faster than the reference", r["ns"].get("reference"))):
                k = ratio(v, g)
                if k is None:
                    continue
                who = f" ({LABEL.get(pe, pe)})" if "peer" in what else ""
                rows.append((f"{problem} {what}", f"{large_label(robot)} floating {problem}", f"{k:.2f}×{who}", k >= need,
                             f"gap {need / k:.2f}×"))
    for robot in humanoids:
        r = by[(robot, "FD")]
        rows.append(("g++ -O2 build of the floating humanoid's FD < 10 s (wall; CPU)", f"{large_label(robot)} floating FD "
                     f"({r['code_bytes']:,} B of machine code)", f"{r['build_s']:.1f} s; {r['build_cpu_s']:.1f} s",
                     r["build_s"] < 10, f"gap {r['build_s'] / 10:.2f}×"))
    for ok_row in rows:
        target, solver, measured, ok, gap = ok_row
        w(f"| {target} | {solver} | {measured} | {'met' if ok else f'**not met** ({gap})'} |")
    w("")
    if results:
        base, _ = medians(results)
        w(f"Small robots against the last main run (docs/bench/results.json, {results['context'].get('date', '?')}): "
          "generated double, median ns per call in this run ÷ in that run. Two runs on a shared machine: the main "
          "run's own spread (largest coefficient of variation above) is the noise of this comparison; "
          "\"met\" means at most 5 % slower. The large-robot binary also holds about 25 more solvers than the main "
          "run's, which moves where each solver's code lands: a difference here is not by itself a change of the "
          "generated code (compare the operation counts and instructions per call, which are deterministic).")
        w("")
        w("| robot | problem | main run (ns) | this run (ns) | this ÷ main | no slower than today |")
        w("|---|---|---:|---:|---:|---|")
        for robot in SMALL_ROBOTS:
            for problem in ("ID", "FD"):
                r = by.get((robot, problem))
                b = base.get((problem, robot, "generated_double"))
                if not r or not b or not gen(r):
                    continue
                k = gen(r) / b
                w(f"| {robot} | {problem} | {ns(b)} | {ns(gen(r))} | {k:.2f}× | "
                  f"{'met' if k <= 1.05 else f'**not met** ({k:.2f}× slower)'} |")
        w("")


DERIVATIVES_BEGIN = "<!-- derivatives against Pinocchio: generated by scripts/derivatives_pinocchio.sh, do not edit -->"
DERIVATIVES_END = "<!-- end of the generated tables -->"


def copy_ratio(r, a, b):
    """r[a] / r[b]: with fresh copies (bench/derivatives_pinocchio.py --copies), the median over the copies
    of each copy's ratio (both were timed in one process, in alternating rounds, so what slows a whole
    copy cancels); else the ratio of the two times."""
    c = r.get("copies_ns", {})
    if a in c and b in c:
        return statistics.median([x / y for x, y in zip(c[a], c[b])])
    return ratio(r.get(a), r.get(b))


def copy_spread(r, key):
    """max / min of one time over the copies, or None without copies."""
    xs = r.get("copies_ns", {}).get(key)
    return max(xs) / min(xs) if xs and len(xs) > 1 and min(xs) > 0 else None


# A solver whose time over fresh copies of one binary spans more than PLACED (max / min) while
# Pinocchio's in the same copies spans less than STEADY is marked as placement-sensitive: its time
# depends on where its pages land (issue 28, "How to time it here"), not on load that slows a copy.
PLACED, STEADY = 1.15, 1.08


def derivatives_pinocchio_tables(d):
    """The tables of scripts/derivatives_pinocchio.sh (bench/derivatives_pinocchio.py's JSON): times of
    nelu's value and derivative solvers against Pinocchio's, operation ratios, checks, build times."""
    L = []
    w = L.append
    failed = [r for r in d["records"] if "error" in r]
    recs = [r for r in d["records"] if "error" not in r]
    rounds = max((r["rounds"] for r in recs), default=0)
    copies = max((r.get("copies", 1) for r in recs), default=1)
    how = (f"Each time is the median over {copies} fresh copies of the robot's driver binary (`cp`, run one after "
           f"the other) of each copy's median CPU time per call over {rounds} rounds of alternating batches" if copies > 1
           else f"Median CPU time per call over {rounds} rounds of alternating batches in one process")
    w(f"One run, {d['date']}, {d['cxx']}; load average {', '.join(f'{x:.1f}' for x in d['load_avg'])} at the end "
      f"(a shared 2-core machine). {how} (each round times every contender once, for at least 20 ms, cycling "
      "through the same 16 random states). nelu: `NAME` and `NAME_derivatives` compiled from "
      "`bench/specs/id_zero_fx.yaml` and `fd_zero_fx.yaml` (no external wrenches) with `--scalar double`, "
      "`g++ -O2`; Pinocchio 3.7.0: `rnea`, `aba`, `computeRNEADerivatives`, `computeABADerivatives`, `-O3`. "
      + ("\"÷\" columns are the medians over the copies of each copy's ratio (nelu and Pinocchio timed in the same "
         "process); \"copies\" is max ÷ min of nelu's derivative time over the copies (1.00× when every copy timed "
         "the same); " if copies > 1 else "\"÷\" columns are ratios of these medians; ")
      + "\"Pinocchio ÷ nelu\" above 1 means nelu is faster. ops: mul + add + div of the manifests "
      "(`derivatives.ops` ÷ `ops`).")
    w("")
    for problem, value, deriv, pv, pd in (("id", "ID", "ID derivatives", "rnea", "computeRNEADerivatives"),
                                          ("fd", "FD", "FD derivatives", "aba", "computeABADerivatives")):
        kp = "rnea" if problem == "id" else "aba"
        spread = " copies |" if copies > 1 else ""
        w(f"| robot | class | nv | nelu {value} | Pinocchio {pv} | Pinocchio ÷ nelu | nelu {deriv} | Pinocchio {pd} "
          f"| Pinocchio ÷ nelu |{spread} nelu: derivatives ÷ value (time) | Pinocchio: derivatives ÷ {pv} (time) "
          f"| nelu: derivative ops ÷ value ops |")
        w("|---|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if copies > 1 else "") + "---:|---:|---:|")
        for r in recs:
            kv, kpv = f"{problem}_value_ns", f"pinocchio_{kp}_ns"
            kd, kpd = f"{problem}_derivatives_ns", f"pinocchio_{kp}_derivatives_ns"
            b = r[problem]
            cs = f" {rx(copy_spread(r, kd))} |" if copies > 1 else ""
            w(f"| {r['robot']} | {r['class']} | {r['nv']} | {ns(r[kv])} | {ns(r[kpv])} | {rx(copy_ratio(r, kpv, kv))} | "
              f"{ns(r[kd])} | {ns(r[kpd])} | {rx(copy_ratio(r, kpd, kd))} |{cs} {rx(copy_ratio(r, kd, kv))} | "
              f"{rx(copy_ratio(r, kpd, kpv))} | {rx(ratio(b['derivative_ops'], b['value_ops']))} |")
        w("")
    v3 = [r for r in recs if "id_v3_derivatives_ns" in r]
    if v3:
        flags = " ".join(d.get("batch_flags") or ["-O2", "-march=x86-64-v3"])
        w(f"Built for the machine (issue 28: \"report -march=x86-64-v3 beside it\"): the same derivative solvers compiled "
          f"under names of their own and built `g++ {flags}` (AVX2 and FMA: four columns of double per lane instruction), "
          "timed in the same process and rounds against the same Pinocchio calls (generic -O3); checked first against the "
          "generic build, row by row within 1e-10 (the worst is the last column).")
        w("")
        w("| robot | class | nelu id derivatives, v3 | Pinocchio ÷ nelu | generic ÷ v3 | nelu fd derivatives, v3 | Pinocchio ÷ nelu "
          "| generic ÷ v3 | v3 vs generic |")
        w("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in v3:
            c = r.get("v3_check", {})
            w(f"| {r['robot']} | {r['class']} | {ns(r['id_v3_derivatives_ns'])} | "
              f"{rx(copy_ratio(r, 'pinocchio_rnea_derivatives_ns', 'id_v3_derivatives_ns'))} | "
              f"{rx(copy_ratio(r, 'id_derivatives_ns', 'id_v3_derivatives_ns'))} | {ns(r['fd_v3_derivatives_ns'])} | "
              f"{rx(copy_ratio(r, 'pinocchio_aba_derivatives_ns', 'fd_v3_derivatives_ns'))} | "
              f"{rx(copy_ratio(r, 'fd_derivatives_ns', 'fd_v3_derivatives_ns'))} | {max(c.get('id', 0), c.get('fd', 0)):.1e} |")
        w("")
    hz = [r for r in recs if "horizon_id_batch_ns" in r]
    if hz:
        flags = " ".join(d.get("batch_flags") or ["-O2", "-march=x86-64-v3"])
        w(f"The horizon (issue 28's target: 20× per knot): `NAME_derivatives_batch` on {hz[0].get('horizon_knots', 50)} knots "
          f"in one call (`nelu compile --batch`, `NAME_batch.cpp` built `g++ {flags}`: AVX2, four lanes of double) against "
          "as many calls of Pinocchio's derivatives (-O3, generic, as above), in the same process and alternating rounds; "
          "times per knot. Before timing, the driver checks every knot of one batch call against the scalar "
          "`NAME_derivatives` (row by row, max |batch − scalar| / max(1, max |scalar|), at most 1e-12; the worst is the last "
          "column).")
        w("")
        w("| robot | class | nv | nelu id batch | computeRNEADerivatives | Pinocchio ÷ nelu | nelu fd batch | "
          "computeABADerivatives | Pinocchio ÷ nelu | batch vs scalar |")
        w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in hz:
            c = r.get("horizon_check", {})
            w(f"| {r['robot']} | {r['class']} | {r['nv']} | {ns(r['horizon_id_batch_ns'])} | {ns(r['horizon_pinocchio_rnea_derivatives_ns'])} | "
              f"{rx(copy_ratio(r, 'horizon_pinocchio_rnea_derivatives_ns', 'horizon_id_batch_ns'))} | {ns(r['horizon_fd_batch_ns'])} | "
              f"{ns(r['horizon_pinocchio_aba_derivatives_ns'])} | {rx(copy_ratio(r, 'horizon_pinocchio_aba_derivatives_ns', 'horizon_fd_batch_ns'))} | "
              f"{max(c.get('id', 0), c.get('fd', 0)):.1e} |")
        w("")
    if copies > 1:
        placed = []
        for r in recs:
            for problem, kp in (("id", "rnea"), ("fd", "aba")):
                for kind, kn, kpn in (("", f"{problem}_value_ns", f"pinocchio_{kp}_ns"),
                                      (" derivatives", f"{problem}_derivatives_ns", f"pinocchio_{kp}_derivatives_ns")):
                    a, p = copy_spread(r, kn), copy_spread(r, kpn)
                    if a is not None and p is not None and a > PLACED and p < STEADY:
                        placed.append(f"{r['robot']} {problem}{kind} ({a:.2f}× against Pinocchio's {p:.2f}×)")
        w(f"Placement-sensitive in this run (nelu's time over the copies spans more than {PLACED:.2f}× max ÷ min while "
          f"Pinocchio's, timed in the same copies, spans less than {STEADY:.2f}×): "
          + ("; ".join(placed) if placed else "none") + ".")
        w("")
    w("Agreement, checked by the driver before anything is timed (it stops above 1e-8): max |nelu − Pinocchio| / "
      "max(1, max |Pinocchio|) over the 16 states, per block, in Pinocchio's order (a floating base's rows and "
      "columns permuted to linear first; M and M⁻¹ mirrored from the upper triangles Pinocchio fills):")
    w("")
    w("| robot | tau | ∂tau/∂q | ∂tau/∂qd | M | qdd | ∂qdd/∂q | ∂qdd/∂qd | M⁻¹ |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in recs:
        i, f = r["id_check"], r["fd_check"]
        w(f"| {r['robot']} | " + " | ".join(f"{v:.1e}" for v in (i["tau"], i["dq"], i["dqd"], i["M"], f["qdd"], f["dq"],
                                                                  f["dqd"], f["Minv"])) + " |")
    w("")
    if failed:
        w("Not timed: " + "; ".join(f"{r['robot']}: {r['error']}" for r in failed) + ".")
        w("")
    w(f"What the generated derivative solvers cost to build (`--scalar double`, one entry point each; nelu compile "
      f"includes its complex-step verification): wall time (CPU time in parentheses), with {d['jobs']} parallel jobs "
      f"(all nelu compiles {d['compile_wall_s']:.0f} s, all g++ {d['build_wall_s']:.0f} s of wall time; a solver "
      "marked * was unchanged since an earlier run and not rebuilt, its time is that run's):")
    w("")
    w("| robot | problem | jac columns | value ops | derivative ops | C++ (MB) | nelu compile (s) | g++ -O2 (s) |")
    w("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in d["records"]:
        for problem in ("id", "fd"):
            b = r[problem]
            w(f"| {r['robot']} | {problem} | {b['jac_cols']} | {b['value_ops']:,} | {b['derivative_ops']:,} | "
              f"{b['cpp_bytes'] / 1e6:.2f} | {b['compile_s']:.2f} ({b['compile_cpu_s']:.2f}) | "
              f"{b['build_s']:.1f} ({b['build_cpu_s']:.1f}){' *' if b.get('reused') else ''} |")
    return L


def update_doc_block(path, lines):
    """Replaces the lines between DERIVATIVES_BEGIN and DERIVATIVES_END in path."""
    with open(path) as f:
        text = f.read()
    if DERIVATIVES_BEGIN not in text or DERIVATIVES_END not in text:
        raise SystemExit(f"report: {path} has no generated block ({DERIVATIVES_BEGIN} ... {DERIVATIVES_END})")
    head, rest = text.split(DERIVATIVES_BEGIN, 1)
    _, tail = rest.split(DERIVATIVES_END, 1)
    with open(path, "w") as f:
        f.write(head + DERIVATIVES_BEGIN + "\n\n" + "\n".join(lines) + "\n\n" + DERIVATIVES_END + tail)


def report(args):
    results, sizes, scaling = load(args.results), load(args.sizes), load(args.scaling)
    large, large_results = load(args.large), load(args.large_results)
    os.makedirs(args.plots, exist_ok=True)
    rel = os.path.relpath(args.plots, os.path.dirname(os.path.abspath(args.out)))
    L = []
    w = L.append
    w("# Benchmarks")
    w("")
    w("Generated by `bash scripts/bench.sh` (issue 6); do not edit by hand. The code is in `bench/`:")
    w("`bench/nelu_bench` times the generated solvers against nelu's reference algorithms and the peer")
    w("libraries (those that Debian packages, and Pinocchio from `../shared/peers`), on the same robots (the")
    w("same URDF files), the same states and the same machine, in one run; `bench/scaling.py` measures how")
    w("time, operations, compiler run time and build time grow with the number of bodies.")
    w("")
    if results:
        ctx = results["context"]
        med, cv = medians(results)
        w("## Setup")
        w("")
        w(f"- Machine: {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz "
          f"(shared with other work while measuring), {ctx.get('date', '')}.")
        reps = max((b.get("repetitions", 0) for b in results["benchmarks"]), default=0)
        w(f"- Google Benchmark, {reps} repetitions per benchmark, interleaved in random order over the whole run "
          f"(`--benchmark_enable_random_interleaving`: a burst of load from other work costs one repetition of many "
          f"benchmarks instead of every repetition of one); every number is the **median of the repetitions' "
          f"CPU time per call**, in nanoseconds. Each call computes the next of 16 random states (fixed seed), "
          f"the same states for every contender. The largest coefficient of variation over the repetitions was "
          f"{max(cv.values()) * 100:.1f} % (median {sorted(cv.values())[len(cv) // 2] * 100:.1f} %).")
        w(f"- nelu's code (generated solvers, reference, harness) built with CMake's Release flags (`-O3 -DNDEBUG`, "
          f"no `-march`); the peers are Debian's binary packages, but Pinocchio 3.7.0 (not packaged in Debian), "
          f"used header-only from `../shared/peers/pinocchio-3.7.0` and built with the same flags. "
          f"Peers found: {ctx.get('peers', 'none')}.")
        w("- Robots: the shipped robots (fixed base; the Mini Cheetah also with a floating base), the public robots "
          "of `../shared/robots` (`NELU_BENCH_SHARED_LIST`: iiwa, kinova, ur5, solo12 fixed and floating; not its "
          "Panda, whose fingers are mimic joints) and generated "
          "chains (`nelu robot gen chain --links n --seed 1`, general rotations). The generated solvers are the "
          "`id` and `fd` presets: every link's external wrench f^x is an input; beside them, for the like-for-like "
          "comparison with MuJoCo, solvers compiled from `bench/specs/id_zero_fx.yaml` and `fd_zero_fx.yaml` "
          "(`external_wrenches: zero`: no f^x at all).")
        w("- The compiled problem kinds `osim` and `iwim` are timed in the same run on their own robots "
          "(section [Seed algorithms](#seed-algorithms-osim-and-iwim)).")
        w("")
        w("### What is timed")
        w("")
        w("| contender | inverse dynamics (ID) | forward dynamics (FD) |")
        w("|---|---|---|")
        w("| generated double / float | `NAME_id(q, qd, in, out)` / `NAME_id_f`: tau from qdd and f^x | `NAME_fd` / `NAME_fd_f`: qdd from tau and f^x |")
        w("| generated f^x = 0 double / float | `NAME_id0` / `NAME_id0_f` (`bench/specs/id_zero_fx.yaml`): tau from qdd alone | `NAME_fd0` / `NAME_fd0_f` (`fd_zero_fx.yaml`): qdd from tau alone |")
        w("| reference | `nelu::rnea` (runtime/include/nelu/reference.hpp; written for clarity, allocates) | `nelu::aba` |")
        w("| MuJoCo 2.2.2 | `mj_kinematics`, `mj_comPos`, `mj_comVel`, `mj_rne(flg_acc=1)` = M qdd + bias; MuJoCo's RNE takes no external wrenches, so **f^x = 0** here | `mujoco_forward`: `mj_forward` with `qfrc_applied` = tau and `xfrc_applied` = f^x (whole pipeline; constraints, contacts and passive forces disabled). `mujoco_crb`: `mj_kinematics`, `mj_comPos`, `mj_crb`, `mj_factorM`, `mj_comVel`, `mj_rne(0)`, `mj_solveM` (the minimal FD sequence, **f^x = 0**) |")
        w("| Orocos KDL 1.5.1 | `ChainIdSolver_RNE` (chains), `TreeIdSolver_RNE` (the quadruped) | `ChainFdSolver_RNE` (chains only; KDL has no tree FD); no floating base in KDL |")
        w("| DART 6.12 | state set on the skeleton (which invalidates its cached kinematics), external forces set, `computeInverseDynamics` | state and forces set, `computeForwardDynamics` (articulated-body algorithm) |")
        w("| Pinocchio 3.7.0 | `pinocchio::rnea(model, data, q, v, a, fext)` | `pinocchio::aba(model, data, q, v, tau, fext)` (articulated-body algorithm, its default LOCAL convention) |")
        w("")
        w("Copying the state into a peer's own data structures is part of each timed call (a few ns).")
        w("")

        for problem, engines in (("ID", ID_ENGINES), ("FD", FD_ENGINES)):
            ref_name = "RNEA" if problem == "ID" else "ABA"
            title = "Inverse dynamics" if problem == "ID" else "Forward dynamics"
            w(f"## {title}: median ns per call")
            w("")
            cols = [e for e in engines if any((problem, r, e) in med for r in ROBOTS)]  # f^x = 0 solvers: own section
            w("| robot | " + " | ".join(LABEL[e] for e in cols) + f" | reference {ref_name} / generated | fastest peer / generated | double / float |")
            w("|---|" + "---:|" * (len(cols) + 3))
            for r in ROBOTS:
                g = med.get((problem, r, "generated_double"))
                if g is None:
                    continue
                peers = [(med[(problem, r, p)], p) for p in PEERS[problem] if (problem, r, p) in med]
                best = min(peers) if peers else None
                cells = [ns(med.get((problem, r, e))) for e in cols]
                w(f"| {r} | " + " | ".join(cells) +
                  f" | {rx(ratio(med.get((problem, r, 'reference')), g))}"
                  f" | {rx(ratio(best[0], g)) + ' (' + LABEL[best[1]] + ')' if best else '–'}"
                  f" | {rx(ratio(g, med.get((problem, r, 'generated_float'))))} |")
            w("")
            w(f"![{title}]({rel}/{problem.lower()}.svg)")
            w("")
            bar_chart(os.path.join(args.plots, f"{problem.lower()}.svg"), f"{title}: median time per call",
                      ROBOTS, cols, {(r, e): med.get((problem, r, e)) for r in ROBOTS for e in cols})

        zero_fx_section(w, med, sizes)

        w("## Targets (issue 6)")
        w("")
        w("Ratios of medians in this run. \"Faster than every peer\" compares with each peer's call as described "
          "above, including the MuJoCo calls that skip f^x.")
        w("")
        w("| robot | ID ≥ 3× reference | ID faster than every peer | FD ≥ 3× reference | FD faster than every peer | float ≥ 1.3× double (ID) | float ≥ 1.3× double (FD) |")
        w("|---|---|---|---|---|---|---|")
        tally = {}
        for r in ROBOTS:
            cells = []
            for problem in ("ID", "FD"):
                g = med.get((problem, r, "generated_double"))
                ref = ratio(med.get((problem, r, "reference")), g)
                peers = [med[(problem, r, p)] for p in PEERS[problem] if (problem, r, p) in med]
                cells.append(None if ref is None else (ref >= 3, ref))
                cells.append(None if not peers or g is None else (min(peers) > g, min(peers) / g))
            for problem in ("ID", "FD"):
                f = ratio(med.get((problem, r, "generated_double")), med.get((problem, r, "generated_float")))
                cells.append(None if f is None else (f >= 1.3, f))
            if all(c is None for c in cells):
                continue
            for i, c in enumerate(cells):
                if c is not None:
                    tally.setdefault(i, [0, 0])
                    tally[i][0] += c[0]
                    tally[i][1] += 1
            w(f"| {r} | " + " | ".join("–" if c is None else f"{yes(c[0])} ({c[1]:.2f}×)" for c in cells) + " |")
        w("| **met on** | " + " | ".join(f"{tally[i][0]} of {tally[i][1]}" if i in tally else "–" for i in range(6)) + " |")
        w("")
        w("Heap allocations: `tests/test_no_heap.cpp` counts every `malloc`/`calloc`/`realloc`/`operator new` "
          "around calls of generated ID and FD solvers (double and float) and requires zero per call; it "
          "runs in CI.")
        w("")

        w("## Agreement with the reference at the benchmark states")
        w("")
        w("Checked before anything is timed; a double-precision contender off by more than 1e-8 "
          "(max |x − x_ref| / max(1, max |x_ref|) over the 16 states) stops the run. Calls that cannot "
          "take external wrenches are compared with the reference at f^x = 0.")
        w("")
        engines_all = ["generated_double", "generated_float", "generated_zero_fx_double", "generated_zero_fx_float",
                       "mujoco_rne", "mujoco_forward", "mujoco_crb", "kdl_rne", "dart", "pinocchio"]
        w("| robot | " + " | ".join(f"{LABEL[e]}" for e in engines_all) + " |")
        w("|---|" + "---|" * len(engines_all))
        for r in ROBOTS:
            cells = []
            for e in engines_all:
                parts = [ctx[f"check/{p}/{r}/{e}"].replace(" (f^x = 0)", "") + f" ({p})"
                         for p in ("ID", "FD") if f"check/{p}/{r}/{e}" in ctx]
                cells.append(", ".join(parts) if parts else "–")
            if any(c != "–" for c in cells):
                w(f"| {r} | " + " | ".join(cells) + " |")
        w("")
        unavailable = sorted((k.split("/", 2)[1:], v) for k, v in ctx.items() if k.startswith("unavailable/"))
        if unavailable:
            w("Not run: " + "; ".join(f"{e} on {r}: {v}" for (r, e), v in unavailable) + ".")
            w("")
        imported = {k.split("/", 1)[1]: v for k, v in ctx.items() if k.startswith("mujoco_inertia_import/")}
        if imported:
            w("MuJoCo's model compiler stores every body inertia as principal moments and axes found by an "
              "iterative eigen-decomposition (absolute tolerance 1e-12 in 2.2.2); on robots with full inertia "
              "tensors this moved the inertias by up to " + max(imported.values(), key=float) + " relative (of "
              "the body's largest moment) and MuJoCo's results as in the table below, beyond the 1e-8 check. The harness "
              "therefore checks that MuJoCo imported nelu's inertias to 1e-6 and then writes the exact principal "
              "decomposition of nelu's inertias (Eigen) into the loaded mjModel; per robot, MuJoCo's imported "
              "deviation was: " + ", ".join(f"{r} {v}" for r, v in imported.items()) + ".")
            w("")
            w("MuJoCo on its own imported inertias (checked, not timed), scaled error against the reference:")
            w("")
            w("| robot | mj_rne (ID, f^x = 0) | mj_forward (FD) |")
            w("|---|---|---|")
            for r in ROBOTS:
                a = ctx.get(f"check/ID/{r}/mujoco_rne_as_imported", "–").replace(" (f^x = 0)", "")
                b = ctx.get(f"check/FD/{r}/mujoco_forward_as_imported", "–")
                if a != "–" or b != "–":
                    w(f"| {r} | {a} | {b} |")
            w("")

    if results:
        responses_section(w, results, med, sizes, args.plots, rel)

    if sizes:
        w("## Generated code size")
        w("")
        w("Bytes of machine code of each entry point with the functions it calls (`nm -S`: `NAME` and "
          "`NAME_impl<double>`, and for long solvers, which the emitter splits into parts, `NAME_partK<double>`; "
          "likewise `<float>`), of the object file's `.text` and `.rodata` sections (both entry points; `.rodata` "
          "holds the model constants), "
          "as built for the benchmark (`-O3`), and the operation count (mul + add + div) from the manifest.")
        w("")
        w("| solver | ops | double (bytes) | float (bytes) | .text | .rodata | bytes per op (double) |")
        w("|---|---:|---:|---:|---:|---:|---:|")
        for name, s in sizes.items():
            per = s["double_bytes"] / s["ops"] if s["double_bytes"] and s["ops"] else None
            w(f"| {name} | {s['ops']:,} | {s['double_bytes'] or 0:,} | {s['float_bytes'] or 0:,} | {s['text_bytes']:,} | "
              f"{s['rodata_bytes']:,} | {per:.1f} |" if per else f"| {name} | {s['ops']:,} | – | – | {s['text_bytes']:,} | {s['rodata_bytes']:,} | – |")
        w("")

    w("## Derivatives")
    w("")
    w("The derivative solvers (`nelu compile --derivatives`) are timed by `bash scripts/derivatives_bench.sh`, not in this run: the value solver, `NAME_derivatives` and central differences of the value solver (2 (2 nv + n_in) calls) per call, and the operations per structurally nonzero Jacobian entry, on the shipped robots and the floating humanoid. The measured table and what it says about the issue's targets are in [derivatives.md](derivatives.md#cost).")
    w("")
    deriv = load(args.derivatives_pinocchio)
    if deriv:
        w("### Against Pinocchio's analytic derivatives")
        w("")
        w("Generated by `bash scripts/derivatives_pinocchio.sh` (docs/bench/derivatives_pinocchio.json), not in "
          "this run: nelu's generated value and derivative solvers and Pinocchio's `rnea`, `aba`, "
          "`computeRNEADerivatives` and `computeABADerivatives` in one process (bench/pinocchio_derivatives_driver.cpp), "
          "after checking that they compute the same values and Jacobians. What the numbers say: "
          "[derivatives.md](derivatives.md#against-pinocchio).")
        w("")
        for line in derivatives_pinocchio_tables(deriv):
            w(line)
        w("")

    if scaling:
        recs = scaling["records"]
        w("## Scaling with the number of bodies")
        w("")
        w(f"Generated chains and binary trees (`nelu robot gen chain|tree --links n [--branching 2] --seed 1`, general "
          f"rotations), n in {', '.join(str(n) for n in scaling['sizes'])} (`NELU_BENCH_SIZES`; n = 1000 is left out "
          f"of the default run because building its solvers with `g++ -O2` takes about an hour on two cores). Time per call (CPU time): "
          f"median of 7 repetitions of at least 0.1 s over 16 random states (bench/scaling_driver.cpp, `g++ -O2`); "
          f"reference: nelu's RNEA / ABA on the same robot (`nelu_bench_reference`). `nelu compile` time includes "
          f"its own verification of the solver on 26 states; build time is `{scaling.get('cxx', 'g++')} -O2 -c` of the "
          f"generated .cpp (double and float entry points). Wall times, one run.")
        w("")
        w("| robot | problem | ops | generated double (ns) | generated float (ns) | reference (ns) | reference / generated | nelu compile (s) | g++ -O2 (s) | .text (bytes) |")
        w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in recs:
            flag = "" if r["double_status"] == 0 and r["float_status"] == 0 else " (status ≠ 0)"
            w(f"| {r['shape']} {r['n']} | {r['problem'].upper()} | {r['ops']:,} | {ns(r['double_ns'])}{flag} | {ns(r['float_ns'])} | "
              f"{ns(r['reference_ns'])} | {rx(ratio(r['reference_ns'], r['double_ns']))} | {r['compile_s']:.2f} | {r['build_s']:.1f} | {r['text_bytes']:,} |")
        w("")
        w(f"![time per call]({rel}/scaling_time.svg)")
        w("")
        w(f"![operations]({rel}/scaling_ops.svg)")
        w("")
        w(f"![compiler and build time]({rel}/scaling_build.svg)")
        w("")

        def pts(shape, problem, key):
            return [(r["n"], r[key]) for r in recs if r["shape"] == shape and r["problem"] == problem]

        colors = {("chain", "id"): "#1f77b4", ("chain", "fd"): "#d62728", ("tree", "id"): "#2ca02c", ("tree", "fd"): "#9467bd"}
        series = []
        for shape in ("chain", "tree"):
            for problem in ("id", "fd"):
                c = colors[(shape, problem)]
                series.append((f"{shape} {problem.upper()} generated", c, False, pts(shape, problem, "double_ns")))
                series.append((f"{shape} {problem.upper()} reference", c, True, pts(shape, problem, "reference_ns")))
        line_chart(os.path.join(args.plots, "scaling_time.svg"), "Time per call (double) against n", "n (bodies)",
                   "median time per call", series, fmt_ns)
        series = [(f"{s} {p.upper()}", colors[(s, p)], False, pts(s, p, "ops")) for s in ("chain", "tree") for p in ("id", "fd")]
        line_chart(os.path.join(args.plots, "scaling_ops.svg"), "Operations (mul + add + div) against n", "n (bodies)",
                   "operations", series)
        series = []
        for s in ("chain", "tree"):
            for p in ("id", "fd"):
                series.append((f"{s} {p.upper()} nelu compile", colors[(s, p)], False, pts(s, p, "compile_s")))
                series.append((f"{s} {p.upper()} g++ -O2", colors[(s, p)], True, pts(s, p, "build_s")))
        line_chart(os.path.join(args.plots, "scaling_build.svg"), "Compiler run time and build time against n",
                   "n (bodies)", "seconds (wall)", series)

    if large and large_results:
        large_section(w, large, large_results, results)

    batch = load(args.batch)
    if batch:  # scripts/batch_bench.sh's run
        import batch as batch_bench
        w("")
        w(batch_bench.section(batch))

    contacts = load(args.contacts_pinocchio)
    if contacts:  # scripts/contacts_pinocchio.sh's run
        import contacts_pinocchio
        w("")
        w(contacts_pinocchio.section(contacts))

    with open(args.out, "w") as f:
        f.write("\n".join(L).rstrip() + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--collect-sizes")
    ap.add_argument("--sizes-out")
    ap.add_argument("--results")
    ap.add_argument("--sizes")
    ap.add_argument("--scaling")
    ap.add_argument("--large", help="bench/large.py's JSON (scripts/bench.sh --large)")
    ap.add_argument("--large-results", help="the large-robot benchmark run (scripts/bench.sh --large)")
    ap.add_argument("--derivatives-pinocchio", help="bench/derivatives_pinocchio.py's JSON (scripts/derivatives_pinocchio.sh)")
    ap.add_argument("--update-doc", help="with --derivatives-pinocchio only: rewrite the tables in this file "
                    "(docs/derivatives.md) between its generated-block markers")
    ap.add_argument("--batch", help="bench/batch.py's JSON (scripts/batch_bench.sh)")
    ap.add_argument("--contacts-pinocchio", help="bench/contacts_pinocchio.py's JSON (scripts/contacts_pinocchio.sh)")
    ap.add_argument("--out")
    ap.add_argument("--plots")
    args = ap.parse_args()
    if args.collect_sizes:
        collect_sizes(args.collect_sizes, args.sizes_out)
    elif args.update_doc:
        update_doc_block(args.update_doc, derivatives_pinocchio_tables(load(args.derivatives_pinocchio)))
    else:
        report(args)


if __name__ == "__main__":
    main()
