#!/usr/bin/env python3
"""scaling.py: the scaling run of scripts/bench.sh (issue 6, part 2).

For generated chains and binary trees (`nelu robot gen chain|tree --links N --seed 1`, general
transforms) of every size N: the compiler's run time (`nelu compile`, which includes its own
verification of the solver on 26 states), the build time of the generated .cpp (double and float
entry points) with `g++ -O2 -c`, the operation count from the manifest, the generated solver's
time per call (double and float, bench/scaling_driver.cpp) and the reference RNEA / ABA time per
call (nelu_bench_reference). Writes one JSON record per (shape, N, problem).

usage: scaling.py --nelu NELU --reference NELU_BENCH_REFERENCE --sizes 7,30,100 --out FILE.json
"""
import argparse
import json
import os
import tempfile

from common import ROOT, arithmetic_ops, key_values, run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nelu", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--sizes", default="7,30,100,300")
    ap.add_argument("--shapes", default="chain,tree")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    records = []
    with tempfile.TemporaryDirectory(prefix="nelu-scaling.") as tmp:
        for shape in args.shapes.split(","):
            for n in sizes:
                name = f"{shape}{n}"
                urdf = os.path.join(tmp, name + ".urdf")
                gen = [args.nelu, "robot", "gen", shape, "--links", str(n), "--seed", "1", "-o", urdf]
                if shape == "tree":
                    gen[4:4] = ["--branching", "2"]
                run(gen)
                ref = key_values(run([args.reference, urdf]).stdout)
                for problem in ("id", "fd"):
                    solver = f"{name}_{problem}"
                    t_compile = run([args.nelu, "compile", urdf, "--problem", problem, "--name", solver, "-o", tmp]).wall_s
                    obj = os.path.join(tmp, solver + ".o")
                    t_build = run([args.cxx, "-std=c++17", "-O2", "-I", os.path.join(ROOT, "runtime", "include"),
                                   "-c", os.path.join(tmp, solver + ".cpp"), "-o", obj]).wall_s
                    exe = os.path.join(tmp, solver + "_driver")
                    run([args.cxx, "-std=c++17", "-O2", "-I", os.path.join(ROOT, "runtime", "include"), "-I", tmp,
                         f"-DNELU_SOLVER={solver}", f'-DNELU_SOLVER_HEADER="{solver}.hpp"',
                         os.path.join(ROOT, "bench", "scaling_driver.cpp"), obj, "-o", exe])
                    drv = key_values(run([exe]).stdout)
                    with open(os.path.join(tmp, solver + ".json")) as f:
                        ops = json.load(f)["ops"]
                    text = sum(int(l.split()[1]) for l in run(["size", "-A", obj]).stdout.splitlines()
                               if l.startswith(".text"))
                    rec = {
                        "shape": shape, "n": n, "problem": problem,
                        "ops": arithmetic_ops(ops), "sqrt": ops.get("sqrt", 0),
                        "sincos": ops.get("sincos", 0),
                        "compile_s": round(t_compile, 3), "build_s": round(t_build, 3),
                        "text_bytes": text,
                        "double_ns": drv["double_ns"][0], "float_ns": drv["float_ns"][0],
                        "double_status": int(drv["double_status"][0]), "float_status": int(drv["float_status"][0]),
                        "reference_ns": ref["rnea_ns" if problem == "id" else "aba_ns"][0],
                    }
                    records.append(rec)
                    print(f"scaling: {solver:14s} ops {rec['ops']:8d}  nelu {t_compile:7.2f} s  g++ -O2 {t_build:7.2f} s"
                          f"  double {rec['double_ns']:10.1f} ns  float {rec['float_ns']:10.1f} ns"
                          f"  reference {rec['reference_ns']:10.1f} ns", flush=True)
                    for f in (obj, exe, os.path.join(tmp, solver + ".cpp")):
                        os.remove(f)
    with open(args.out, "w") as f:
        json.dump({"sizes": sizes, "cxx": args.cxx, "records": records}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
