#!/usr/bin/env bash
# fuzz.sh [SECONDS]: build the libFuzzer targets with clang + ASan/UBSan and fuzz for SECONDS in all
# (default 60): URDF loading (fuzz_load) for half of them, then problem spec reading (fuzz_spec) for
# the rest. Exits non-zero when libFuzzer reports a crash, leak, timeout or sanitizer error in
# either, and prints a one-line summary per target last.
#
#   build-fuzz/                    separate clang build (ignored by git through build*/)
#   build-fuzz/corpus/             fuzz_load's growing corpus, kept between runs
#   build-fuzz/corpus-spec/        fuzz_spec's
#   build-fuzz/artifacts/          crash-*, leak-*, timeout-* inputs that reproduce a finding:
#                                  build-fuzz/fuzz/fuzz_load build-fuzz/artifacts/crash-...
#   build-fuzz/artifacts-spec/     fuzz_spec's
# The seed corpora are assembled at run time in temporary directories: for fuzz_load from
# fuzz/seeds/*.urdf, tests/fixtures/malformed/*.urdf, robots/*.urdf and perturbed copies of
# robots/*.urdf (`nelu robot perturb`; nelu: NELU or NELU_BUILD_DIR, scripts/lib.sh); for fuzz_spec from
# robots/specs/*.yaml, bench/specs/*.yaml and tests/fixtures/**/*.yaml.
set -euo pipefail

duration="${1:-60}"
if ! [[ "$duration" =~ ^[0-9]+$ ]] || [ "$duration" -lt 1 ]; then
    echo "usage: $0 [SECONDS]" >&2
    exit 2
fi

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$root"
build="$root/build-fuzz"

# Configure once (the generator cannot change afterwards), then build only the fuzz target.
if [ ! -f "$build/CMakeCache.txt" ]; then
    generator=()
    if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
    CC=clang CXX=clang++ cmake -S "$root" -B "$build" "${generator[@]}" \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNELU_BUILD_FUZZERS=ON -DNELU_SANITIZE=ON \
        -DNELU_BUILD_TESTS=OFF -DNELU_BUILD_BENCHMARKS=OFF
fi
cmake --build "$build" --target fuzz_load fuzz_spec -j "$(nproc 2>/dev/null || echo 2)"

seeds="$(mktemp -d "${TMPDIR:-/tmp}/nelu-fuzz-seeds.XXXXXX")"
spec_seeds="$(mktemp -d "${TMPDIR:-/tmp}/nelu-fuzz-spec-seeds.XXXXXX")"
log="$(mktemp "${TMPDIR:-/tmp}/nelu-fuzz-log.XXXXXX")"
trap 'rm -rf "$seeds" "$spec_seeds" "$log"' EXIT
shopt -s nullglob globstar
nseeds=0
for f in fuzz/seeds/*.urdf tests/fixtures/malformed/*.urdf robots/*.urdf; do
    # flatten the path so that equal base names from different directories do not collide
    cp "$f" "$seeds/${f//\//_}"
    nseeds=$((nseeds + 1))
done
nspec=0
for f in robots/specs/*.yaml bench/specs/*.yaml tests/fixtures/**/*.yaml; do
    cp "$f" "$spec_seeds/${f//\//_}"
    nspec=$((nspec + 1))
done
shopt -u nullglob globstar
# Perturbed copies of the shipped robots, as exporters write real files (noise in axes, origins and
# inertias, 1 mg indefinite links, massless leaves, mimic tags).
find_nelu
seed=1
for f in robots/*.urdf; do
    "$nelu" robot perturb "$f" --jitter 1e-7 --tiny-links 2 --massless-leaves 1 --mimic 2 --seed "$seed" \
        -o "$seeds/perturbed_$(basename "$f")"
    nseeds=$((nseeds + 1)) seed=$((seed + 1))
done
mkdir -p "$build/corpus" "$build/artifacts" "$build/corpus-spec" "$build/artifacts-spec"
load_seconds=$(((duration + 1) / 2)) spec_seconds=$((duration / 2))
[ "$spec_seconds" -ge 1 ] || spec_seconds=1
echo "fuzz: fuzz_load: $nseeds seed inputs, corpus $build/corpus, running ${load_seconds}s"
echo "fuzz: fuzz_spec: $nspec seed inputs, corpus $build/corpus-spec, running ${spec_seconds}s"

# LeakSanitizer suppressions for leaks proven to be inside third-party libraries go in
# fuzz/lsan.supp (none needed so far: no leak has been reported).
if [ -f "$root/fuzz/lsan.supp" ]; then
    export LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# fuzz TARGET SECONDS CORPUS SEEDS DICT ARTIFACTS: run one fuzzer (new inputs go to CORPUS; the
# seeds are read only) and set `summary` to its one-line outcome; returns non-zero on a finding.
fuzz() {
    local fuzzer="$build/fuzz/$1" status=0 artifact runs
    "$fuzzer" "$3" "$4" \
        -max_total_time="$2" -timeout=10 -rss_limit_mb=2048 \
        -dict="$5" -artifact_prefix="$6/" -print_final_stats=1 \
        2>&1 | tee "$log" || status=$?
    artifact="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)"
    runs="$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 \2/p' "$log" | tail -n 1)"
    if [ "$status" -ne 0 ] || [ -n "$artifact" ]; then
        summary="fuzz: $1: FAILED (libFuzzer exit $status)${artifact:+: $artifact}; reproduce with: $fuzzer ${artifact:-<input>}"
        return 1
    fi
    if [ -z "$runs" ]; then
        summary="fuzz: $1: FAILED: libFuzzer did not finish normally"
        return 1
    fi
    summary="fuzz: $1: ${runs% *} runs in ${runs#* } s, no crash"
}

failed=0
fuzz fuzz_load "$load_seconds" "$build/corpus" "$seeds" "$root/fuzz/urdf.dict" "$build/artifacts" || failed=1
load_summary="$summary"
fuzz fuzz_spec "$spec_seconds" "$build/corpus-spec" "$spec_seeds" "$root/fuzz/spec.dict" "$build/artifacts-spec" || failed=1
echo "$load_summary"
echo "$summary"
exit "$failed"
