#!/usr/bin/env bash
# test.sh: the whole test suite, as CI runs it.
#   1. Release-with-debug-info build, every doctest suite through CTest (but the label extended: the
#      largest derivative solvers, `ctest --test-dir build -L extended`), then the README's main job
#      (scripts/demo.sh: the UR5e's id and fd compiled, built, checked, counted), then the installed
#      package used by examples/consumer and examples/contacts (scripts/example.sh, about a
#      minute and a half, mostly g++ on the contact example's derivatives), then a benchmark
#      smoke (bench/ built with the chain of 7 only and the iwim cases on a DH chain of 8 instead
#      of 50 links, whose fully actuated solver alone takes about a minute of g++; the agreement
#      checks of every contender, osim and iwim included, and the contact reference against
#      Pinocchio's constraintDynamics and impulseDynamics when Pinocchio is found; one robot timed
#      briefly; with NELU_SMOKE_CONTACTS=1 also six generated contact solvers and their derivatives
#      against Pinocchio (bench/contacts_pinocchio.py --check-only: its driver alone takes about
#      five minutes of g++ on Pinocchio's contact-derivative templates, too long for every CI run;
#      scripts/contacts_pinocchio.sh checks every case before it times them);
#      the full benchmark is scripts/bench.sh, not CI), then the Python package's pytest suite
#      (python/tests, about two minutes: installed into .venv by scripts/python_package.sh, the
#      README's command);
#   2. the same suites built with AddressSanitizer + UndefinedBehaviorSanitizer (but the one
#      labelled slow, which builds ~80 generated solvers and runs its own sanitizer cases);
#   3. the URDF-loading fuzzer for a bounded time (NELU_FUZZ_SECONDS, default 60);
#   4. scripts/firmware.sh on the UR5e: its solvers cross-compiled for Cortex-M7, Cortex-M4F and
#      aarch64 Linux, run under QEMU and compared with the host (about 20 s).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# the scripts run below use this build's nelu (scripts/lib.sh)
export NELU_BUILD_DIR="$PWD/build"
unset NELU

echo "== build (RelWithDebInfo) (at ${SECONDS} s)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
echo "== tests (at ${SECONDS} s)"
ctest --test-dir build --output-on-failure -j"$jobs" -LE extended   # ctest -L extended: the largest derivative solvers
echo "== the README's main job: scripts/demo.sh on the UR5e (at ${SECONDS} s)"
demo_out=$(mktemp -d)
trap 'rm -rf "$demo_out"' EXIT
NELU_DEMO_OUT="$demo_out" bash scripts/demo.sh
echo "== installed package: examples/consumer, examples/contacts (at ${SECONDS} s)"
bash scripts/example.sh
echo "== Python package: pytest (python/tests), installed into .venv as the README says (at ${SECONDS} s)"
bash scripts/python_package.sh
NELU_EXE="$PWD/build/compiler/nelu" .venv/bin/python -m pytest python/tests
echo "== benchmark smoke: every contender agrees with the reference; one robot timed briefly (at ${SECONDS} s)"
cmake -S . -B build -DNELU_BUILD_BENCHMARKS=ON -DNELU_BENCH_CHAINS=7 -DNELU_BENCH_IWIM_LINKS=8 -DNELU_BENCH_LARGE=OFF -DNELU_BENCH_CONTACTS_DRIVER_OPT=-O1 >/dev/null
cmake --build build -j"$jobs" --target nelu_bench
build/bench/nelu_bench --nelu_check_only 2> >(grep -E "^check|nelu_bench" >&2)
[ ! -d build/bench/CMakeFiles/nelu_contact_pinocchio_check.dir ] || { cmake --build build -j"$jobs" --target nelu_contact_pinocchio_check && build/bench/nelu_contact_pinocchio_check; }
# the generated contact solvers (nelu compile of six contact cases, g++ -O1) against Pinocchio, values and derivatives
[ "${NELU_SMOKE_CONTACTS:-0}" != 1 ] || [ ! -f build/bench/contacts_pinocchio_link.txt ] || { cmake --build build -j"$jobs" --target nelu_bench_contacts_pinocchio &&
  python3 bench/contacts_pinocchio.py --nelu build/compiler/nelu --bench-dir build/bench --check-only --jobs "$jobs"; }
build/bench/nelu_bench --benchmark_filter='^(ID|FD)/ur5e/' --benchmark_min_time=0.01 2>/dev/null

echo "== build (ASan + UBSan) (at ${SECONDS} s)"
# Debug (-O0): built at -O1 the sanitized tree took 891 s of a 2-core machine against 483 s,
# more than the sanitized tests themselves take at -O0 (459 s; 2026-12-02)
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DNELU_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
echo "== tests under ASan + UBSan (at ${SECONDS} s)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE slow

if [ -f scripts/fuzz.sh ]; then
  echo "== fuzz (at ${SECONDS} s)"
  bash scripts/fuzz.sh "${NELU_FUZZ_SECONDS:-60}"
fi

echo "== firmware: Cortex-M7, Cortex-M4F and aarch64 Linux under QEMU (scripts/firmware.sh) (at ${SECONDS} s)"
bash scripts/firmware.sh robots/ur5e.urdf
echo "== all passed (at ${SECONDS} s)"
