"""The cache: a second compile with the same inputs loads the library without running nelu or the
C++ compiler; a changed URDF, spec or option builds anew; concurrent processes agree."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import nelu
from conftest import ROBOTS, TEST_FLAGS, bitwise_equal, random_states


@pytest.fixture
def counted(monkeypatch):
    """Records the nelu subcommands run (compile, model, check) and the C++ builds."""
    runs = []
    real_run, real_subprocess = nelu._tool.run, subprocess.run

    def run(exe, args):
        if not args[0].startswith("-"):  # not --version, --runtime-include (asked once per process)
            runs.append(args[0])
        return real_run(exe, args)

    def subprocess_run(command, **kw):
        if "-shared" in command:
            runs.append("c++")
        return real_subprocess(command, **kw)

    monkeypatch.setattr(nelu._tool, "run", run)
    monkeypatch.setattr(subprocess, "run", subprocess_run)
    return runs


def test_rebuilds_when_the_urdf_changes_and_not_otherwise(tmp_path, counted):
    cache = tmp_path / "cache"
    urdf = tmp_path / "robot.urdf"
    original = (ROBOTS / "ur5e.urdf").read_text()
    urdf.write_text(original)

    def compile_(**options):
        options.setdefault("cxxflags", TEST_FLAGS)
        return nelu.compile(urdf, problem="fd", cache_dir=cache, **options)

    first = compile_()
    assert counted == ["compile", "c++"]
    Q, QD, IN = random_states(first, np.random.default_rng(19), 3)
    before = first(Q, QD, IN)
    again = compile_()
    assert counted == ["compile", "c++"]  # nothing run: the cached library
    assert again.directory == first.directory and bitwise_equal(again(Q, QD, IN), before)
    urdf.touch()  # the same content: still cached
    assert compile_().directory == first.directory and counted == ["compile", "c++"]

    urdf.write_text(original.replace('<mass value="3.761"/>', '<mass value="4.761"/>', 1))
    heavier = compile_()
    assert counted == ["compile", "c++"] * 2
    assert heavier.directory != first.directory
    assert not bitwise_equal(heavier(Q, QD, IN), before)
    urdf.write_text(original)  # back: the first entry again
    assert compile_().directory == first.directory and counted == ["compile", "c++"] * 2

    # options, flags, and rebuild=True make or remake an entry
    assert compile_(scalar="double").directory != first.directory
    assert compile_(cxxflags="-O1").directory != first.directory
    assert counted == ["compile", "c++"] * 4
    rebuilt = compile_(rebuild=True)
    assert rebuilt.directory == first.directory and counted == ["compile", "c++"] * 5
    assert rebuilt.library != first.library  # loaded anew, not the library of the same path loaded before
    assert bitwise_equal(rebuilt(Q, QD, IN), before)
    assert bitwise_equal(first(Q, QD, IN), before)  # the library loaded before the rebuild still works
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no temporary directories left


def test_rebuilds_when_the_spec_changes(tmp_path, counted):
    cache = tmp_path / "cache"
    spec = tmp_path / "spec.yaml"
    spec.write_text("version: 1\nproblem: fd\nexternal_wrenches: zero\n")
    a = nelu.compile(ROBOTS / "ur5e.urdf", problem=spec, cache_dir=cache, cxxflags=TEST_FLAGS)
    assert nelu.compile(ROBOTS / "ur5e.urdf", problem=spec, cache_dir=cache, cxxflags=TEST_FLAGS).directory == a.directory
    spec.write_text("version: 1\nproblem: fd\nexternal_wrenches: {default: zero, input: [wrist_3_link]}\n")
    b = nelu.compile(ROBOTS / "ur5e.urdf", problem=spec, cache_dir=cache, cxxflags=TEST_FLAGS)
    assert b.directory != a.directory and (a.nin, b.nin) == (6, 12)
    assert counted == ["compile", "c++"] * 2
    # the same spec as a dict: its own entry (the spec's text differs), built once
    as_dict = {"version": 1, "problem": "fd", "external_wrenches": "zero"}
    c = nelu.compile(ROBOTS / "ur5e.urdf", problem=as_dict, cache_dir=cache, cxxflags=TEST_FLAGS)
    assert nelu.compile(ROBOTS / "ur5e.urdf", problem=dict(as_dict), cache_dir=cache, cxxflags=TEST_FLAGS).directory == c.directory
    assert counted == ["compile", "c++"] * 3


def test_cache_location(tmp_path, monkeypatch):
    monkeypatch.delenv("NELU_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert nelu.cache_dir() == tmp_path / "xdg" / "nelu"
    monkeypatch.setenv("NELU_CACHE_DIR", str(tmp_path / "mine"))
    assert nelu.cache_dir() == tmp_path / "mine"
    assert nelu.cache_dir(tmp_path / "given") == tmp_path / "given"
    solver = nelu.compile(ROBOTS / "ur5e.urdf", problem="id", cxxflags=TEST_FLAGS)
    assert solver.directory.parent == tmp_path / "mine"


def test_relative_cache_dir_survives_chdir(tmp_path, monkeypatch):
    """A relative cache directory is taken from the directory at compile time: the solver still
    checks and pickles after os.chdir."""
    (tmp_path / "work").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    solver = nelu.compile(ROBOTS / "ur5e.urdf", problem="id", cache_dir="relcache", cxxflags=TEST_FLAGS)
    assert solver.directory.is_absolute() and solver.directory.parent == tmp_path / "work" / "relcache"
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert "PASS" in solver.check(states=3)
    again = pickle.loads(pickle.dumps(solver))
    assert again.directory == solver.directory
    monkeypatch.setenv("NELU_CACHE_DIR", "envcache")
    assert nelu.cache_dir() == tmp_path / "elsewhere" / "envcache"


def test_concurrent_processes_build_one_entry(tmp_path):
    """Processes compiling the same solver at once all get a working library; one entry remains."""
    cache = tmp_path / "cache"
    script = textwrap.dedent(f"""
        import sys, numpy as np, nelu
        s = nelu.compile({str(ROBOTS / 'ur5e.urdf')!r}, problem="id", cache_dir={str(cache)!r}, cxxflags={TEST_FLAGS!r})
        print(s.directory, s(np.zeros(6), np.zeros(6), np.zeros(s.nin))[1])
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(nelu.__file__).parents[1])}  # this nelu package, installed or not
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(3)]
    results = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in results]
    lines = {out.strip() for out, _ in results}
    assert len(lines) == 1
    assert [p for p in cache.iterdir() if not p.name.startswith(".")] == [Path(lines.pop().split()[0])]
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]


def test_a_killed_builds_directory_is_removed_by_the_next_build(tmp_path):
    """SIGTERM or SIGKILL leave a build's temporary directory (no `finally` runs): the next build in
    the cache removes it, as its lock is free; not a directory whose build holds its lock (here
    another process of this test), nor a young one."""
    cache = tmp_path / "cache"
    cache.mkdir()
    old = time.time() - 3600
    dead, live, young = (cache / f".tmp-{c * 32}-x" for c in "012")
    for d in (dead, live, young):
        (d / "partial").mkdir(parents=True)
        (d / ".building").touch()
    for d in (dead, live):
        os.utime(d, (old, old))
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, os, sys, time
        fd = os.open({str(live / '.building')!r}, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("locked", flush=True)
        time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        nelu.compile(ROBOTS / "ur5e.urdf", problem="id", cache_dir=cache, cxxflags=TEST_FLAGS)
        assert not dead.exists()
        assert live.exists() and young.exists()
    finally:
        holder.kill()
        holder.wait()
    assert sorted(p.name for p in cache.glob(".tmp-*")) == sorted([live.name, young.name])
    assert not [p for p in cache.iterdir() if not p.name.startswith(".") and (p / ".building").exists()]  # no lock file in an entry


def test_check_after_a_rebuild_says_what_happened(tmp_path):
    """rebuild=True replaces the entry: a solver loaded before keeps computing with its library, and
    its check() says that library is gone instead of failing in nelu check on a missing file."""
    cache = tmp_path / "cache"
    old = nelu.compile(ROBOTS / "ur5e.urdf", problem="id", cache_dir=cache, cxxflags=TEST_FLAGS)
    new = nelu.compile(ROBOTS / "ur5e.urdf", problem="id", cache_dir=cache, cxxflags=TEST_FLAGS, rebuild=True)
    Q, QD, IN = random_states(old, np.random.default_rng(5), 3)
    assert bitwise_equal(old(Q, QD, IN), new(Q, QD, IN))
    with pytest.raises(nelu.Error, match="no longer in the cache"):
        old.check(states=2)
    assert "PASS" in new.check(states=2)
