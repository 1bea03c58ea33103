#!/usr/bin/env bash
# contact_oracle.sh: writes tests/oracle/contacts/*.json, the Pinocchio reference values of contact
# dynamics that tests/test_oracle.cpp compares the compiled programs with (issue 27, "Verified how").
#
#   bash scripts/contact_oracle.sh
#
# Builds nelu and the Pinocchio contact driver (bench/contacts_pinocchio_driver.cpp, Pinocchio 3.7.0
# from ../shared/peers or NELU_PINOCCHIO_DIR) in the benchmark build (build-bench, as
# scripts/contacts_pinocchio.sh), then bench/contacts_pinocchio.py --oracle: for each of its ORACLE
# cases (every contact kind, frame, Baumgarte gain and impulse, on the shipped Mini Cheetah,
# humanoid_winter and UR5e), Pinocchio's constraintDynamics or impulseDynamics and their analytic
# derivatives at NELU_ORACLE_STATES (default 3) regular random states (fixed seed), in nelu's slots,
# with the problem spec. Pinocchio's numbers do not depend on nelu's code: nelu's value solver only
# chooses regular states. Run it again when a case or the slot conventions change, and commit the
# files it writes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$root"
build="$bench_build_dir"
contacts_driver_build "$build" "nothing written"
python3 bench/contacts_pinocchio.py --nelu "$build/compiler/nelu" --bench-dir "$build/bench" \
  --oracle tests/oracle/contacts --oracle-states "${NELU_ORACLE_STATES:-3}" --jobs "$(nproc)"
