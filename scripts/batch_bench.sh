#!/usr/bin/env bash
# batch_bench.sh: the batch forms' benchmark (bench/batch.py, bench/batch_driver.cpp): per-state
# time of NAME_batch and NAME_f_batch at n = 256 against the scalar NAME, built with g++ -O2 for
# x86-64 (SSE2) and x86-64-v3 (AVX2, FMA), on the shipped robots and ../shared/robots (when present),
# fixed and floating base, id and fd; the derivative solvers (bench/specs/*_zero_fx.yaml) of the
# robots in NELU_BATCH_DERIVATIVES; the lane program alone on lane-major states (what a lane-major
# layout would save); code size of every form, x86-64-v4 (AVX-512) included (compiled, not run:
# this machine has no AVX-512). Writes docs/bench/batch.json and prints the Markdown tables of
# docs/bench.md, "Batches of states" (bench/batch.py --report docs/bench/batch.json prints them
# again). About 40 minutes on 2 cores.
#   NELU, NELU_BUILD_DIR     the nelu used (scripts/lib.sh)
#   NELU_BATCH_ROBOTS        comma-separated URDFs (default: robots/*.urdf and ../shared/robots/*.urdf)
#   NELU_BATCH_DERIVATIVES   robots (file names without .urdf) whose derivative solvers are timed
#                            (default: ur5e,panda_gaz2019,quadruped_minicheetah)
#   NELU_BATCH_ONLY_DERIVATIVES=1  time those derivative solvers only (about 15 minutes) and replace
#                            the derivative records of docs/bench/batch.json, keeping its value records
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$root"
find_nelu
robots="${NELU_BATCH_ROBOTS:-}"
if [ -z "$robots" ]; then
  robots="$(ls robots/*.urdf | tr '\n' ',')"
  if [ -d ../shared/robots ]; then robots+="$(ls ../shared/robots/*.urdf | tr '\n' ',')"
  else echo "batch_bench: ../shared/robots is absent: the shipped robots only" >&2; fi
fi
mkdir -p docs/bench
python3 bench/batch.py --nelu "$nelu" --robots "$robots" \
  --derivatives "${NELU_BATCH_DERIVATIVES:-ur5e,panda_gaz2019,quadruped_minicheetah}" --out docs/bench/batch.json \
  ${NELU_BATCH_ONLY_DERIVATIVES:+--only-derivatives}
