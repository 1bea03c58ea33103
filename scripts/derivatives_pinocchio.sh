#!/usr/bin/env bash
# derivatives_pinocchio.sh: nelu's generated derivative solvers against Pinocchio 3.7.0's analytic
# derivatives, and its value solvers against Pinocchio's rnea and aba (issue 20), on the shipped
# robots and ../shared/robots: docs/bench/derivatives_pinocchio.json, the tables of
# docs/derivatives.md ("Against Pinocchio") and of docs/bench.md ("Derivatives").
#
#   bash scripts/derivatives_pinocchio.sh            configure and build (Release) nelu and the driver
#                                                    (bench/pinocchio_derivatives_driver.cpp, Pinocchio
#                                                    at -O3), then bench/derivatives_pinocchio.py: nelu
#                                                    compile --derivatives of every robot's id and fd
#                                                    (no external wrenches), g++ -O2 of the generated
#                                                    sources in parallel, the driver of each robot run
#                                                    alone (check, then alternating timed batches);
#                                                    then the reports
#   bash scripts/derivatives_pinocchio.sh --report   only rewrite the tables from the JSON file
#
# It takes whatever `nelu compile --derivatives` emits: rerun it after a change of the derivative
# programs. Generated sources identical to those of an earlier run, with the same runtime headers,
# are not compiled again (BUILD/bench/derivatives_pinocchio/, bench/common.py build_cached). The
# floating humanoids' fd derivative solvers are the
# longest builds (minutes of g++ -O2 each, started first).
#
# Environment:
#   NELU_BENCH_BUILD_DIR   build directory (default build-bench, as scripts/bench.sh and scripts/lib.sh;
#                          an existing one keeps its configuration, benchmarks turned on), whose nelu
#                          is the one run
#   NELU_DERIV_ROBOTS      only the rows matching this regular expression (e.g. 'ur5e|iiwa')
#   NELU_DERIV_JOBS        parallel nelu compile and g++ jobs (default: nproc)
#   NELU_DERIV_ROUNDS      rounds of alternating batches (default 21)
#   NELU_DERIV_HORIZON     0: no horizon (by default, where the machine has AVX2 and FMA, every solver's batch
#                          derivative form is built -march=x86-64-v3 and a horizon of 50 knots timed against
#                          Pinocchio, per knot)
#   NELU_DERIV_COPIES      fresh copies (cp) of each robot's driver, run one after the other; every time
#                          is the median over them, every ratio the median of the copies' ratios (default 3)
#   NELU_PINOCCHIO_DIR     Pinocchio's folder (default ../shared/peers/pinocchio-3.7.0)
#   NELU_BENCH_SHARED_ROBOTS  the public robots (default ../shared/robots); absent ones are skipped
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$root"
build="$bench_build_dir"
json=docs/bench/derivatives_pinocchio.json
case "${1:-run}" in
  run|--report) ;;
  *) echo "usage: scripts/derivatives_pinocchio.sh [--report]" >&2; exit 2 ;;
esac

if [ "${1:-run}" = run ]; then
  echo "== configure and build ($build): nelu and the Pinocchio driver"
  # a new build directory is Release; an existing one keeps its build type (the driver is -O3 -DNDEBUG
  # whatever it is, and nelu's own flags do not enter the generated code's g++ -O2 build)
  new=()
  [ -f "$build/CMakeCache.txt" ] || new=(-DCMAKE_BUILD_TYPE=Release -DNELU_BUILD_TESTS=OFF)
  nelu_configure "$build" "${new[@]}" -DNELU_BUILD_BENCHMARKS=ON ${NELU_PINOCCHIO_DIR:+-DNELU_PINOCCHIO_DIR="$NELU_PINOCCHIO_DIR"} |
    grep -E "nelu_bench: .*Pinocchio" || true
  if [ ! -f "$build/bench/pinocchio_derivatives_link.txt" ]; then
    echo "derivatives_pinocchio: Pinocchio is not configured in $build (see the message above): nothing measured" >&2
    exit 1
  fi
  nelu_build "$build" nelu nelu_bench_pinocchio_derivatives
  mkdir -p docs/bench
  echo "== nelu compile, g++ -O2, check and time"
  python3 bench/derivatives_pinocchio.py --nelu "$build/compiler/nelu" --bench-dir "$build/bench" --out "$json" \
    --shared-robots "${NELU_BENCH_SHARED_ROBOTS:-../shared/robots}" --jobs "${NELU_DERIV_JOBS:-$(nproc)}" \
    --rounds "${NELU_DERIV_ROUNDS:-21}" --copies "${NELU_DERIV_COPIES:-3}" ${NELU_DERIV_ROBOTS:+--robots "$NELU_DERIV_ROBOTS"} \
    $([ "${NELU_DERIV_HORIZON:-1}" = 0 ] && echo --no-horizon)
fi

echo "== report"
python3 bench/report.py --derivatives-pinocchio "$json" --update-doc docs/derivatives.md
bash scripts/bench.sh --report >/dev/null
echo "derivatives_pinocchio: done ($json, docs/derivatives.md, docs/bench.md)"
