"""A batch of states shared among threads: times one call of a solver's batch entry point on N
states with workers=1 and with workers=K (default 2), and prints the speed-up (docs/python.md,
"Threads").

    python examples/python/batch_threads.py [--robots ur5e minicheetah] [--n 10000 100000]
                                            [--repeats 15] [--workers 2] [--derivatives]

The two calls alternate, so that both see the same load on a shared machine; the speed-up is the
median over the pairs of time(workers=1) / time(workers=K), with its quartiles and range. "CPU" is
the process's CPU time over the wall time of a call: about 1 for one thread on an idle core, up
to K for K threads on idle cores, less when other processes take the cores. Each call writes into
the same out= arrays: no allocation is timed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import nelu

ROBOTS = {"ur5e": ("ur5e.urdf", False), "minicheetah": ("quadruped_minicheetah.urdf", True)}


def states(solver: nelu.Solver, n: int, rng: np.random.Generator):
    """n random states: angles in [-pi, pi], a floating base's unit quaternion (q[3:7])."""
    q = rng.uniform(-np.pi, np.pi, (n, solver.nq))
    if solver.floating_base:
        quat = rng.normal(size=(n, 4))
        q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    return q, rng.normal(size=(n, solver.nv)), rng.normal(size=(n, solver.nin))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=list(ROBOTS))
    parser.add_argument("--n", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--derivatives", action="store_true", help="time the derivatives' batch entry point")
    options = parser.parse_args()
    repository = Path(__file__).resolve().parents[2]
    print(f"{len(os.sched_getaffinity(0))} cores, load average {os.getloadavg()[0]:.1f}")
    for robot in options.robots:
        urdf, floating = ROBOTS[robot]
        solver = nelu.compile(repository / "robots" / urdf, problem="fd", floating_base=floating, batch=True,
                              derivatives=options.derivatives)
        call: Callable[..., Any] = solver
        if options.derivatives:
            call = solver.derivatives
        for n in options.n:
            args = states(solver, n, np.random.default_rng(0))
            *outs, _ = call(*args, return_status=True)
            out = tuple(outs) if options.derivatives else outs[0]
            wall: dict[int, list[float]] = {1: [], options.workers: []}
            cpu: dict[int, list[float]] = {1: [], options.workers: []}
            for _ in range(options.repeats):
                for workers in wall:
                    start, start_cpu = time.perf_counter(), time.process_time()
                    call(*args, out=out, workers=workers, return_status=True)
                    wall[workers].append(time.perf_counter() - start)
                    cpu[workers].append((time.process_time() - start_cpu) / wall[workers][-1])
            ratios = [a / b for a, b in zip(wall[1], wall[options.workers])]
            low, _, high = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
            print(f"{solver.name}{'_derivatives' if options.derivatives else ''} n={n}: "
                  + ", ".join(f"workers={w} {statistics.median(t) / n * 1e9:.0f} ns/state (CPU {statistics.median(cpu[w]):.2f})"
                              for w, t in wall.items())
                  + f"; speed-up {statistics.median(ratios):.2f} (quartiles {low:.2f}-{high:.2f}, range {min(ratios):.2f}-{max(ratios):.2f})")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
