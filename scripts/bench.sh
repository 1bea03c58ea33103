#!/usr/bin/env bash
# bench.sh: the benchmark of issue 6, and the report docs/bench.md with its plots in docs/bench/.
#
#   bash scripts/bench.sh            build (Release, -DNELU_BUILD_BENCHMARKS=ON), check every
#                                    contender against the reference, run bench/nelu_bench with
#                                    repetitions (docs/bench/results.json), measure the generated
#                                    code size (docs/bench/code_size.json), write the report. One run
#                                    times ID and FD (with and without external wrenches) and the
#                                    compiled osim and iwim kinds against the seed-algorithm
#                                    references and the dense route (bench/responses.cpp).
#   bash scripts/bench.sh --scaling  the scaling run only (docs/bench/scaling.json), then the report
#   bash scripts/bench.sh --all      both
#   bash scripts/bench.sh --large    the large robots (docs/bench.md "Large robots", issue 13): build
#                                    nelu_bench with -DNELU_BENCH_LARGE=ON (humanoid_winter, the iCub
#                                    of ../shared/robots when present, trees of NELU_BENCH_LARGE_TREES
#                                    links; fixed and floating), check every contender, time them with
#                                    the UR5e, Panda and Mini Cheetah in one run
#                                    (docs/bench/large_results.json), then per ID / FD solver the
#                                    `nelu compile` and `g++ -O2 -c` wall times and scripts/profile.sh
#                                    (cachegrind instructions, code and stack bytes) by bench/large.py
#                                    (docs/bench/large.json), then the report. About 30 min on two cores.
#   bash scripts/bench.sh --report   only rewrite docs/bench.md and the plots from the JSON files
#
# Environment:
#   NELU_BENCH_BUILD_DIR    build directory (default build-bench; scripts/lib.sh), whose nelu is the one run
#   NELU_BENCH_REPETITIONS  Google Benchmark repetitions; the report uses their medians (default 10)
#   NELU_BENCH_MIN_TIME     minimum seconds per repetition (default 0.1)
#   NELU_BENCH_CHAINS       chain lengths of the main run (default "7;30;100")
#   NELU_BENCH_IWIM_LINKS   links of the DH chain of the iwim benchmark (default 50, Kroeg et al.'s)
#   NELU_BENCH_LARGE_TREES  links of the large-robot trees (default "50;100;300")
#   NELU_BENCH_LARGE_PROFILE  0: --large times the robots but keeps docs/bench/large.json (compile and
#                           g++ times, cachegrind at -O2) from an earlier run of the same generated code
#   NELU_BENCH_SIZES        sizes of the scaling run (default 7,30,100,300; adding 1000 costs about
#                           an hour of g++ -O2 time on two cores, which is why it is not the default)
# Peers (MuJoCo, Orocos KDL, DART; Pinocchio from ../shared/peers with the Boost libraries) are used
# when scripts/setup.sh has installed them; the CMake configure step says which were found. The
# derivative solvers against Pinocchio's analytic derivatives: scripts/derivatives_pinocchio.sh; the
# contact-dynamics solvers against Pinocchio's contact algorithms: scripts/contacts_pinocchio.sh.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$root"
build="$bench_build_dir"
reps="${NELU_BENCH_REPETITIONS:-10}"
min_time="${NELU_BENCH_MIN_TIME:-0.1}"
sizes="${NELU_BENCH_SIZES:-7,30,100,300}"
mode="${1:-main}"
case "$mode" in
  main|--scaling|--all|--large|--report) ;;
  *) echo "usage: scripts/bench.sh [--scaling|--all|--large|--report]" >&2; exit 2 ;;
esac
mkdir -p docs/bench

if [ "$mode" != "--report" ]; then
  large=OFF
  [ "$mode" = --large ] && large=ON
  echo "== configure and build ($build, Release, NELU_BENCH_LARGE=$large)"
  nelu_configure "$build" -DCMAKE_BUILD_TYPE=Release -DNELU_BUILD_BENCHMARKS=ON -DNELU_BUILD_TESTS=OFF \
    -DNELU_BENCH_CHAINS="${NELU_BENCH_CHAINS:-7;30;100}" -DNELU_BENCH_IWIM_LINKS="${NELU_BENCH_IWIM_LINKS:-50}" \
    -DNELU_BENCH_LARGE="$large" -DNELU_BENCH_LARGE_TREES="${NELU_BENCH_LARGE_TREES:-50;100;300}" \
    | grep -E "nelu_bench" || true
  nelu_build "$build" nelu nelu_bench nelu_bench_reference
fi

if [ "$mode" = main ] || [ "$mode" = --all ]; then
  echo "== check every contender against the reference"
  "$build/bench/nelu_bench" --nelu_check_only 2> >(grep -E "^check|nelu_bench" >&2)
  echo "== benchmark: $reps repetitions of at least ${min_time} s each"
  # repetitions interleaved in random order: a burst of load from other work on a shared machine
  # then costs one repetition of many benchmarks, which the median ignores, instead of all of one
  "$build/bench/nelu_bench" --benchmark_repetitions="$reps" --benchmark_min_time="$min_time" \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true --benchmark_out=docs/bench/results.json --benchmark_out_format=json \
    2>/dev/null | grep -E "_median|^Run on|^CPU" || true
  echo "== generated code size"
  python3 bench/report.py --collect-sizes "$build/bench/solver_objects.txt" --sizes-out docs/bench/code_size.json
fi

if [ "$mode" = --large ]; then
  echo "== check every contender against the reference"
  "$build/bench/nelu_bench" --nelu_check_only 2> >(grep -E "^check|nelu_bench" >&2)
  # the small robots beside the large ones, so that every ratio is one of this run; double only
  robots='panda_gaz2019|ur5e|quadruped_minicheetah|quadruped_minicheetah_floating|humanoid_winter|humanoid_winter_floating'
  robots="$robots|icub_reduced|icub_reduced_floating|tree[0-9]+|tree[0-9]+_floating"
  engines='generated_double|reference|mujoco_rne|mujoco_forward|mujoco_crb|kdl_rne|dart|pinocchio'
  echo "== benchmark of the large robots: $reps repetitions of at least ${min_time} s each"
  "$build/bench/nelu_bench" --benchmark_filter="^(ID|FD)/($robots)/($engines)\$" \
    --benchmark_repetitions="$reps" --benchmark_min_time="$min_time" \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
    --benchmark_out=docs/bench/large_results.json --benchmark_out_format=json 2>/dev/null | grep -E "_median" || true
  if [ "${NELU_BENCH_LARGE_PROFILE:-1}" = 1 ]; then
    echo "== nelu compile, g++ -O2 and scripts/profile.sh of every large-robot solver"
    python3 bench/large.py --nelu "$build/compiler/nelu" --bench-dir "$build/bench" \
      --out docs/bench/large.json
  else
    echo "== docs/bench/large.json kept (NELU_BENCH_LARGE_PROFILE=0)"
  fi
fi

if [ "$mode" = --scaling ] || [ "$mode" = --all ]; then
  echo "== scaling: sizes $sizes"
  python3 bench/scaling.py --nelu "$build/compiler/nelu" --reference "$build/bench/nelu_bench_reference" \
    --sizes "$sizes" --out docs/bench/scaling.json
fi

echo "== report"
python3 bench/report.py --results docs/bench/results.json --sizes docs/bench/code_size.json \
  --scaling docs/bench/scaling.json --large docs/bench/large.json \
  --large-results docs/bench/large_results.json --derivatives-pinocchio docs/bench/derivatives_pinocchio.json \
  --batch docs/bench/batch.json --contacts-pinocchio docs/bench/contacts_pinocchio.json --out docs/bench.md --plots docs/bench
echo "bench: done (docs/bench.md, docs/bench/)"
