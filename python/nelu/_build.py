"""nelu.compile: run `nelu compile`, build the generated C++ into a shared library, cache it."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from . import _tool
from ._errors import BuildError, CompileWarning, Error, InputError, ToolNotFoundError
from ._solver import Solver

#: Bumped when the layout of a cache entry or the meaning of its key changes.
_CACHE_FORMAT = 1
_PRESETS = ("id", "fd", "hybrid")
#: Flags of every build, before the caller's (which can override them: a later -O wins).
_BASE_FLAGS = ["-std=c++17", "-O2", "-shared", "-fPIC"]


def cache_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """Where compiled solvers are kept: ``path`` if given, else NELU_CACHE_DIR, else
    $XDG_CACHE_HOME/nelu, else ~/.cache/nelu; absolute (a relative one is taken from the current
    directory now, so that solvers keep finding their entries after os.chdir). Deleting it (or an
    entry in it) is always safe for processes that do not use it at the time."""
    if path is not None:
        return Path(path).absolute()
    if os.environ.get("NELU_CACHE_DIR"):
        return Path(os.environ["NELU_CACHE_DIR"]).absolute()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return ((Path(xdg) if xdg else Path.home() / ".cache") / "nelu").absolute()


_cache_root = cache_dir  # the function, where a parameter of compile() takes its name


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what}: {exc.strerror}", exit_code=2) from None


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _spec_value(value: object) -> object:
    """A spec's value that JSON does not know: NumPy's scalars and arrays as Python numbers and
    lists; anything else is a TypeError that names its type."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"a value of type {type(value).__name__} ({value!r}) is not a number, a string, a list or a map")


def _problem(problem: object, cache: Path) -> tuple[str, bytes | None]:
    """The --problem argument and the spec's text (None for a preset). A dict is a spec's content:
    written as JSON (which is YAML) to cache/specs/SHA.yaml, so that messages name a real file."""
    if isinstance(problem, dict):
        try:
            # (allow_nan=False: JSON's NaN and Infinity are no YAML numbers, and the message would
            # name the generated file, not the value)
            text = (json.dumps(problem, indent=2, default=_spec_value, allow_nan=False) + "\n").encode()
        except (TypeError, ValueError) as exc:
            why = "a number is NaN or infinite, where a spec's numbers are finite" if "Out of range float" in str(exc) else str(exc)
            raise InputError(f"problem (a spec as a dict): {why}", exit_code=2) from None
        path = cache / "specs" / f"{hashlib.sha256(text).hexdigest()[:24]}.yaml"
        if not path.is_file():
            _write_atomic(path, text)
        return str(path), text
    if not isinstance(problem, (str, os.PathLike)):
        raise TypeError(f"problem must be id, fd, hybrid, a spec's path or a spec as a dict, not {type(problem).__name__}")
    p = os.fspath(problem)
    if p in _PRESETS:
        return p, None
    return _tool.path_arg(p), _read(Path(p), "problem spec (not id, fd or hybrid, so a YAML file)")


def _compile_args(*, floating_base, derivatives, batch, snap, ignore_mimic, name, scalar, max_stack, verify, lanes=True) -> list[str]:
    """The options of `nelu compile`, as arguments."""
    args = _tool.load_args(floating_base=floating_base, snap=snap, ignore_mimic=ignore_mimic)
    if derivatives:
        args.append("--derivatives")
        if not lanes:
            args.append("--no-lanes")
    if batch:
        args.append("--batch")
    if name is not None:
        args += ["--name", str(name)]
    if scalar is not None:
        args += ["--scalar", str(scalar)]
    if max_stack is not None:
        args += ["--max-stack", str(int(max_stack))]
    if verify is not None:
        args += ["--verify", str(int(verify))]
    return args


def _words(value: str | Sequence[str] | None, env: str, default: str) -> list[str]:
    if value is None:
        value = os.environ.get(env) or default
    return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


def _headers_digest(include: str) -> str:
    """A digest of the runtime headers the generated code includes (a changed header rebuilds)."""
    h = hashlib.sha256()
    for f in sorted((Path(include) / "nelu").glob("*")):
        if f.is_file():
            h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def compile(urdf: str | os.PathLike[str], problem: str | os.PathLike[str] | dict[str, Any] = "id", *, floating_base: bool = False,
            derivatives: bool = False, lanes: bool = True, batch: bool = False, snap: float | None = None, ignore_mimic: bool = False,
            name: str | None = None, scalar: str | None = None, max_stack: int | None = None, verify: int | None = None,
            cxx: str | Sequence[str] | None = None, cxxflags: str | Sequence[str] | None = None,
            cache_dir: str | os.PathLike[str] | None = None, nelu_exe: str | os.PathLike[str] | None = None, rebuild: bool = False) -> Solver:
    """Compile a robot and a problem into a solver, build it and load it (docs/python.md).

    ``problem``: id, fd, hybrid, the path of a YAML spec, or a spec's content as a dict. The options
    are those of ``nelu compile`` (``--floating-base``, ``--derivatives``, ``lanes=False`` for ``--no-lanes``, ``--batch``, ``--snap``,
    ``--ignore-mimic``, ``--name``, ``--scalar``, ``--max-stack``, ``--verify``). The library is built
    with ``cxx`` (default: the CXX environment variable, else c++) and ``-std=c++17 -O2 -shared
    -fPIC`` followed by ``cxxflags`` (default: CXXFLAGS). The result is cached by the contents of
    the URDF and the spec, the options, the nelu executable and version, the compiler and its flags:
    a second call with the same inputs loads the cached library; ``rebuild=True`` builds again.
    """
    exe = _tool.find_nelu(nelu_exe)
    version, include, stamp = _tool.about(exe)
    cache = _cache_root(cache_dir)
    urdf_path = Path(urdf)
    urdf_text = _read(urdf_path, "URDF")
    problem_arg, spec_text = _problem(problem, cache)
    options = _compile_args(floating_base=floating_base, derivatives=derivatives, batch=batch, snap=snap,
                            ignore_mimic=ignore_mimic, name=name, scalar=scalar, max_stack=max_stack, verify=verify, lanes=lanes)
    compiler = _words(cxx, "CXX", "c++")
    flags = _words(cxxflags, "CXXFLAGS", "")
    key_material = {
        "format": _CACHE_FORMAT, "nelu": version, "executable": list(stamp), "runtime_headers": _headers_digest(include),
        "urdf": hashlib.sha256(urdf_text).hexdigest(),
        "problem": problem_arg if spec_text is None else {"spec": hashlib.sha256(spec_text).hexdigest()},
        "options": options, "cxx": compiler, "cxxflags": flags,
    }
    key = hashlib.sha256(json.dumps(key_material, sort_keys=True).encode()).hexdigest()[:32]
    entry = cache / key
    if rebuild or not (entry / "entry.json").is_file():
        _build(entry, exe, urdf_path, urdf_text, problem_arg, spec_text, options, compiler, flags, include, key_material, rebuild)
    solver = Solver(entry, nelu_exe=exe, urdf=os.path.abspath(urdf_path))
    # the log of the call that built the entry names the URDF as that call spelled it: a call with
    # another file of the same contents gets its own file's name in the warnings
    built_as = solver._urdf_arg
    here = _tool.path_arg(urdf_path)
    for line in solver.log.splitlines():
        if line.startswith("warning: "):
            text = line[len("warning: "):]
            if built_as and built_as != here and text.startswith(built_as + ":"):
                text = here + text[len(built_as):]
            warnings.warn(CompileWarning(text), stacklevel=2)
    return solver


def _build(entry: Path, exe: str, urdf_path: Path, urdf_text: bytes, problem_arg: str, spec_text: bytes | None,
           options: list[str], compiler: list[str], flags: list[str], include: str, key_material: dict, rebuild: bool) -> None:
    """Compile and build into a fresh directory beside `entry`, then rename it to `entry`, so that
    other processes see either no entry or a complete one."""
    if not compiler or shutil.which(compiler[0]) is None:
        raise ToolNotFoundError(f"the C++ compiler '{compiler[0] if compiler else ''}' is not found: set CXX (or pass cxx=) "
                                f"to a C++17 compiler, e.g. g++")
    entry.parent.mkdir(parents=True, exist_ok=True)
    _sweep(entry.parent)
    tmp = Path(tempfile.mkdtemp(dir=entry.parent, prefix=f".tmp-{entry.name}-"))
    lock = os.open(tmp / _LOCK, os.O_CREAT | os.O_RDWR, 0o600)  # held while this process builds
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = _tool.run(exe, ["compile", _tool.path_arg(urdf_path), "--problem", problem_arg, *options, "-o", str(tmp)])
        if _read(urdf_path, "URDF") != urdf_text or (spec_text is not None and _read(Path(problem_arg), "problem spec") != spec_text):
            raise Error(f"{urdf_path} or its problem spec changed while it was being compiled: compile again")
        manifests = sorted(tmp.glob("*.json"))
        if len(manifests) != 1:
            raise Error(f"nelu compile wrote {len(manifests)} manifests into {tmp}, expected one")
        name = manifests[0].stem
        sources = sorted(str(p) for p in tmp.glob("*.cpp"))  # NAME.cpp, and NAME_batch.cpp with --batch
        # a name of its own per build: the dynamic loader shares a library by its path, so a rebuilt
        # entry loaded in a process that loaded the old one must have another
        library = f"lib{name}-{tmp.name.rsplit('-', 1)[1]}.so"
        command = [*compiler, *_BASE_FLAGS, *flags, "-I", include, "-I", str(tmp), *sources, "-o", str(tmp / library)]
        built = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
        if built.returncode != 0:
            output = (built.stdout + built.stderr).strip()
            raise BuildError(f"the generated solver {name} does not build:\n  {shlex.join(command)}\n{output[-4000:]}",
                             command=command, stdout=built.stdout, stderr=built.stderr)
        (tmp / "robot.urdf").write_bytes(urdf_text)  # what `check()` checks against
        if spec_text is not None:
            (tmp / "spec.yaml").write_bytes(spec_text)
        (tmp / "compile.log").write_text(proc.stdout + proc.stderr)
        record = {"name": name, "library": library, "urdf": os.path.abspath(urdf_path), "urdf_arg": _tool.path_arg(urdf_path),
                  "spec": spec_text is not None,
                  "sources": [Path(s).name for s in sources], "build": command, "key": key_material}
        (tmp / "entry.json").write_text(json.dumps(record, indent=2) + "\n")
        os.unlink(tmp / _LOCK)  # (still held: the directory is not a killed build's)
        _publish(tmp, entry, rebuild)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        os.close(lock)


_LOCK = ".building"
_STALE_SECONDS = 24 * 3600  # a directory without a lock file
_YOUNG_SECONDS = 60  # a directory whose builder may not hold its lock yet


def _sweep(cache: Path) -> None:
    """Remove the temporary directories of builds whose process is gone (killed by SIGTERM or
    SIGKILL, where no `finally` runs). A build holds an flock on its directory's `.building` file,
    which the kernel releases when the process dies (whatever its host or PID namespace, NFS
    included); a directory whose lock can be taken, and that is over a minute old (not one whose
    builder is about to take it), is a dead build's. One without the file (a finished build's
    last step, or an older package's) is removed after a day."""
    now = time.time()
    for d in cache.glob(".tmp-*"):
        try:
            age = now - d.stat().st_mtime
            fd = os.open(d / _LOCK, os.O_RDWR)
        except FileNotFoundError:  # (no lock file, or the directory went)
            if d.is_dir() and age > _STALE_SECONDS:
                shutil.rmtree(d, ignore_errors=True)
            continue
        except OSError:
            continue
        try:
            if age > _YOUNG_SECONDS:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(d, ignore_errors=True)  # (its lock still held: no other sweeper removes it twice)
        except OSError:
            pass  # locked: a build in progress
        finally:
            os.close(fd)


def _publish(tmp: Path, entry: Path, replace: bool) -> None:
    """Rename the finished directory to the entry. If another process published the same entry
    first, keep theirs (the same inputs built the same way); with `replace`, move it aside first
    (a process that loaded its library keeps using it)."""
    if replace and entry.exists():
        old = Path(tempfile.mkdtemp(dir=entry.parent, prefix=f".old-{entry.name}-"))
        try:
            os.rename(entry, old / "entry")
        except FileNotFoundError:
            pass
        shutil.rmtree(old, ignore_errors=True)
    try:
        os.rename(tmp, entry)
    except OSError:
        if not (entry / "entry.json").is_file():
            raise
