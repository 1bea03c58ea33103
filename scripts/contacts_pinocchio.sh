#!/usr/bin/env bash
# contacts_pinocchio.sh: nelu's generated contact-dynamics solvers (issue 27) against Pinocchio 3.7.0's
# constraintDynamics, impulseDynamics, pv, constrainedABA and their analytic derivatives:
# docs/bench/contacts_pinocchio.json and the section "Contact dynamics" of docs/bench.md.
#
#   bash scripts/contacts_pinocchio.sh            configure and build (Release) nelu and the driver
#                                                 (bench/contacts_pinocchio_driver.cpp, Pinocchio at
#                                                 -O3), then bench/contacts_pinocchio.py: per contact
#                                                 case (Mini Cheetah with four point feet, humanoid
#                                                 with two 6-D soles, UR5e with a 6-D tool; LOCAL and
#                                                 LOCAL_WORLD_ALIGNED; Baumgarte; impulses) nelu
#                                                 compile --derivatives, g++ -O2 and g++ -O2
#                                                 -march=x86-64-v3 in parallel, then the driver of each
#                                                 case, in NELU_CONTACTS_COPIES fresh copies run one
#                                                 after the other (check, then alternating timed
#                                                 rounds); the Mini Cheetah's and the humanoid's LOCAL
#                                                 cases also with --batch: a horizon of 50 knots in one
#                                                 call of the batch derivatives (-march=x86-64-v3)
#                                                 against 50 Pinocchio calls, per knot; then docs/bench.md
#   bash scripts/contacts_pinocchio.sh --report   only rewrite docs/bench.md from the JSON file
#
# The run exits 1 when nelu disagrees with Pinocchio on any case (the JSON file marks the case).
# Generated sources identical to those of an earlier run, with the same flags and runtime headers,
# are not compiled again (BUILD/bench/contacts_pinocchio/, bench/common.py build_cached); the
# humanoid's derivative solvers are the longest builds.
# About 25 minutes on two cores from scratch.
#
# Environment:
#   NELU_BENCH_BUILD_DIR   build directory (default build-bench, as scripts/bench.sh and scripts/lib.sh;
#                          an existing one keeps its configuration, benchmarks turned on)
#   NELU_CONTACTS_CASES    only the cases matching this regular expression (e.g. 'minicheetah.*'); their
#                          records replace those of the same cases in the JSON file, the others are kept
#   NELU_CONTACTS_JOBS     parallel nelu compile and g++ jobs (default: nproc)
#   NELU_CONTACTS_ROUNDS   rounds of alternating batches per copy (default 21)
#   NELU_CONTACTS_COPIES   fresh copies of each case's binary (default 3)
#   NELU_PINOCCHIO_DIR     Pinocchio's folder (default ../shared/peers/pinocchio-3.7.0)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$root"
build="$bench_build_dir"
json=docs/bench/contacts_pinocchio.json
case "${1:-run}" in
  run|--report) ;;
  *) echo "usage: scripts/contacts_pinocchio.sh [--report]" >&2; exit 2 ;;
esac

if [ "${1:-run}" = run ]; then
  echo "== configure and build ($build): nelu and the Pinocchio contact driver"
  contacts_driver_build "$build" "nothing measured"
  mkdir -p docs/bench
  echo "== nelu compile, g++ -O2 (and -march=x86-64-v3), check and time"
  python3 bench/contacts_pinocchio.py --nelu "$build/compiler/nelu" --bench-dir "$build/bench" --out "$json" \
    --jobs "${NELU_CONTACTS_JOBS:-$(nproc)}" --rounds "${NELU_CONTACTS_ROUNDS:-21}" \
    --copies "${NELU_CONTACTS_COPIES:-3}" ${NELU_CONTACTS_CASES:+--cases "$NELU_CONTACTS_CASES"}
fi

echo "== report"
bash scripts/bench.sh --report >/dev/null
echo "contacts_pinocchio: done ($json, docs/bench.md)"
