# shellcheck shell=bash
# lib.sh: sourced (never run) by the scripts in scripts/, before they change directory:
#     . "$(dirname "$0")/lib.sh"
# It sets `root` (the repository, absolute) and `script` (the script's name, for messages), and
# gives every script the same way to find nelu and its build directory:
#
#   NELU            a nelu executable, used as it is (never built); takes precedence over
#                   NELU_BUILD_DIR for the scripts that only run nelu
#   NELU_BUILD_DIR  the build directory (default: the repository's build/). When NELU is unset,
#                   the directory is configured when it has no CMakeCache.txt yet (RelWithDebInfo;
#                   Ninja and ccache when they are installed) and its compiler/nelu is built, or
#                   brought up to date, on every run (nothing to do when it is current)
#   NELU_BENCH_BUILD_DIR  the build of scripts/bench.sh and scripts/derivatives_pinocchio.sh
#                   (default: build-bench): they configure it themselves (Release, benchmarks on)
#                   and run that build's nelu, whatever NELU says, because the benchmark binaries
#                   are built from the code that nelu generates
#
# A relative path in these variables is taken from the directory the script is run in. When nelu
# cannot be had, every script stops with the same message: "SCRIPT: no nelu: REASON", exit 2 when
# NELU names no executable (a bad argument), 1 when the build fails.

# shellcheck disable=SC2034  # root, script, build_dir and bench_build_dir are for the sourcing script
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
script="$(basename "$0" .sh)"

# absolute_path VALUE DEFAULT: VALUE as an absolute path (from the current directory), or DEFAULT when empty
absolute_path() {
  if [ -n "$1" ]; then realpath -m -- "$1"; else echo "$2"; fi
}
nelu_given="$(absolute_path "${NELU:-}" "")"
build_dir="$(absolute_path "${NELU_BUILD_DIR:-}" "$root/build")"
bench_build_dir="$(absolute_path "${NELU_BENCH_BUILD_DIR:-}" "$root/build-bench")"

# no_nelu STATUS REASON...: the one message of a script that cannot have nelu
no_nelu() {
  local status="$1"
  shift
  echo "$script: no nelu: $*" >&2
  exit "$status"
}

# nelu_configure DIR [CMAKE_ARGS...]: cmake -S ROOT -B DIR CMAKE_ARGS. A new DIR (no CMakeCache.txt)
# is made with Ninja when installed, ccache as the compiler launcher when installed and
# RelWithDebInfo unless CMAKE_ARGS name a build type; an existing one keeps its generator and what
# CMAKE_ARGS do not change. cmake's own output goes to stdout: callers filter or drop it.
nelu_configure() {
  local dir="$1"
  shift
  local fresh=()
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    if command -v ninja >/dev/null 2>&1; then fresh+=(-G Ninja); fi
    if command -v ccache >/dev/null 2>&1; then
      fresh+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    fi
    [[ " $* " == *" -DCMAKE_BUILD_TYPE="* ]] || fresh+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
  fi
  cmake -S "$root" -B "$dir" "${fresh[@]}" "$@"
}

# nelu_build DIR TARGET...: build TARGETs in DIR (configured first when new); quiet unless it fails
nelu_build() {
  local dir="$1"
  shift
  local log
  log="$(mktemp "${TMPDIR:-/tmp}/nelu-build.XXXXXX")"
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    echo "$script: configuring $dir and building $*" >&2
    nelu_configure "$dir" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; no_nelu 1 "cannot configure $dir (cmake's output above)"; }
  fi
  if ! cmake --build "$dir" -j"$(nproc)" --target "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    no_nelu 1 "cannot build $* in $dir (the build's output above)"
  fi
  rm -f "$log"
}

# contacts_driver_build DIR WHAT: configure DIR with the benchmarks and Pinocchio (a new DIR: Release,
# no tests) and build nelu and the Pinocchio contact driver (bench/contacts_pinocchio_driver.cpp at
# -O3); exit 1 saying that WHAT is not done when Pinocchio is not found
contacts_driver_build() {
  local dir="$1" what="$2" new=()
  [ -f "$dir/CMakeCache.txt" ] || new=(-DCMAKE_BUILD_TYPE=Release -DNELU_BUILD_TESTS=OFF)
  nelu_configure "$dir" "${new[@]}" -DNELU_BUILD_BENCHMARKS=ON -DNELU_BENCH_CONTACTS_DRIVER_OPT=-O3 ${NELU_PINOCCHIO_DIR:+-DNELU_PINOCCHIO_DIR="$NELU_PINOCCHIO_DIR"} |
    grep -E "nelu_bench: .*Pinocchio" || true
  if [ ! -f "$dir/bench/contacts_pinocchio_link.txt" ]; then
    echo "$script: Pinocchio is not configured in $dir (see the message above): $what" >&2
    exit 1
  fi
  nelu_build "$dir" nelu nelu_bench_contacts_pinocchio
}

# find_nelu: set `nelu` (absolute) to NELU, or to NELU_BUILD_DIR's compiler/nelu, built as above
find_nelu() {
  if [ -n "$nelu_given" ]; then
    nelu="$nelu_given"
    if [ ! -f "$nelu" ] || [ ! -x "$nelu" ]; then no_nelu 2 "NELU=$NELU is not an executable"; fi
  else
    nelu_build "$build_dir" nelu
    nelu="$build_dir/compiler/nelu"
  fi
}
