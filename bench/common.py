"""common.py: what the benchmark's Python scripts (batch.py, large.py, scaling.py,
derivatives_pinocchio.py, contacts_pinocchio.py, report.py) share: the repository's root, the robots
and specs they time, running a command that must succeed, building a generated source unless it was
built before, and reading a driver's output."""
import filecmp
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the public robots (scripts/setup.sh does not install them; absent ones are skipped)
SHARED_ROBOTS = os.path.join(ROOT, "..", "shared", "robots")
# the shipped robots that the large-robot run times beside the large ones (bench/large.py) and
# compares with the main run (report.py), fixed base but the one named *_floating
SMALL_ROBOTS = ["ur5e", "panda_gaz2019", "quadruped_minicheetah", "quadruped_minicheetah_floating"]
# the derivative solvers' problems: the Jacobian's q, qd and tau or qdd columns, no external wrenches
ZERO_FX_SPECS = {p: os.path.join(ROOT, "bench", "specs", f"{p}_zero_fx.yaml") for p in ("id", "fd")}


class Ran(NamedTuple):
    """What run() returns: the command's standard output, its wall time and its CPU time (user + sys
    of the command and its children), in seconds."""
    stdout: str
    wall_s: float
    cpu_s: float


def run(cmd, cwd=None):
    """Runs cmd (a list) in cwd and returns Ran. When it fails, prints its output and exits naming the
    calling script and the command. The CPU time is the command's own (wait4), so that commands run
    in parallel threads each get theirs."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read()
        if p.returncode != 0:
            sys.stderr.write(stdout + err.read())
            script = os.path.splitext(os.path.basename(sys.argv[0]))[0]
            raise SystemExit(f"{script}: FAILED ({p.returncode}): {' '.join(cmd)}")
    return Ran(stdout, wall, usage.ru_utime + usage.ru_stime)


@functools.lru_cache(maxsize=None)
def runtime_digest():
    """SHA-256 of the runtime headers (runtime/include), which every generated source includes: read
    once per run, not once per object."""
    inc = os.path.join(ROOT, "runtime", "include")
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(inc):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, inc).encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read() + b"\0")
    return h.hexdigest()


def build_cached(new_cpp, cpp, obj, stamp, cxx, flags, cwd):
    """cxx FLAGS -std=c++17 -c of new_cpp, copied to cpp, into obj, unless cpp already holds the same
    source and obj was built from it with the same flags against the same runtime headers (the stamp,
    a JSON file beside it, records them: an object built against other headers is stale, and the
    timings would be the old code's). Returns the stamp's record: build_s, build_cpu_s, flags, and
    reused (True when nothing was built)."""
    runtime = runtime_digest()
    if os.path.exists(obj) and os.path.exists(stamp) and os.path.exists(cpp) and filecmp.cmp(new_cpp, cpp, shallow=False):
        with open(stamp) as f:
            rec = json.load(f)
        if rec.get("flags") == flags and rec.pop("runtime", None) == runtime:
            return dict(rec, reused=True)
    shutil.copyfile(new_cpp, cpp)
    built = run(cxx + flags + ["-std=c++17", "-I", os.path.join(ROOT, "runtime", "include"), "-c", cpp, "-o", obj], cwd=cwd)
    rec = {"build_s": round(built.wall_s, 1), "build_cpu_s": round(built.cpu_s, 1), "flags": flags}
    with open(stamp, "w") as f:
        json.dump(dict(rec, runtime=runtime), f)
    return dict(rec, reused=False)


def key_values(text):
    """A driver's output, lines "KEY VALUE..." of numbers: {KEY: [VALUE, ...]}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out[parts[0]] = [float(x) for x in parts[1:]]
    return out


def arithmetic_ops(ops):
    """Arithmetic operations of a manifest's "ops" (or "derivatives.ops"): mul + add + div."""
    return ops["mul"] + ops["add"] + ops["div"]
