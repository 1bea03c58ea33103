#!/usr/bin/env bash
# fuzz.sh [SECONDS]: build the libFuzzer targets with clang + ASan/UBSan and fuzz URDF loading for
# SECONDS (default 60). Exits non-zero when libFuzzer reports a crash, leak, timeout or sanitizer
# error, and prints a one-line summary last.
#
#   build-fuzz/              separate clang build (ignored by git through build*/)
#   build-fuzz/corpus/       the growing corpus, kept between runs
#   build-fuzz/artifacts/    crash-*, leak-*, timeout-* inputs that reproduce a finding:
#                            build-fuzz/fuzz/fuzz_load build-fuzz/artifacts/crash-...
# The seed corpus is assembled at run time in a temporary directory from fuzz/seeds/*.urdf,
# tests/fixtures/malformed/*.urdf, robots/*.urdf and perturbed copies of robots/*.urdf
# (`nelu robot perturb`; nelu: NELU or NELU_BUILD_DIR, scripts/lib.sh).
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
cmake --build "$build" --target fuzz_load -j "$(nproc 2>/dev/null || echo 2)"
fuzzer="$build/fuzz/fuzz_load"

seeds="$(mktemp -d "${TMPDIR:-/tmp}/nelu-fuzz-seeds.XXXXXX")"
log="$(mktemp "${TMPDIR:-/tmp}/nelu-fuzz-log.XXXXXX")"
trap 'rm -rf "$seeds" "$log"' EXIT
shopt -s nullglob
nseeds=0
for f in fuzz/seeds/*.urdf tests/fixtures/malformed/*.urdf robots/*.urdf; do
    # flatten the path so that equal base names from different directories do not collide
    cp "$f" "$seeds/${f//\//_}"
    nseeds=$((nseeds + 1))
done
shopt -u nullglob
# Perturbed copies of the shipped robots, as exporters write real files (noise in axes, origins and
# inertias, 1 mg indefinite links, massless leaves, mimic tags).
find_nelu
seed=1
for f in robots/*.urdf; do
    "$nelu" robot perturb "$f" --jitter 1e-7 --tiny-links 2 --massless-leaves 1 --mimic 2 --seed "$seed" \
        -o "$seeds/perturbed_$(basename "$f")"
    nseeds=$((nseeds + 1)) seed=$((seed + 1))
done
mkdir -p "$build/corpus" "$build/artifacts"
echo "fuzz: $nseeds seed inputs, corpus $build/corpus, running ${duration}s"

# LeakSanitizer suppressions for leaks proven to be inside third-party libraries go in
# fuzz/lsan.supp (none needed so far: no leak has been reported).
if [ -f "$root/fuzz/lsan.supp" ]; then
    export LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# New inputs go to the first directory; the seeds are read only.
status=0
"$fuzzer" "$build/corpus" "$seeds" \
    -max_total_time="$duration" -timeout=10 -rss_limit_mb=2048 \
    -dict="$root/fuzz/urdf.dict" -artifact_prefix="$build/artifacts/" -print_final_stats=1 \
    2>&1 | tee "$log" || status=$?

artifact="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)"
runs="$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 \2/p' "$log" | tail -n 1)"
if [ "$status" -ne 0 ] || [ -n "$artifact" ]; then
    echo "fuzz: FAILED (libFuzzer exit $status)${artifact:+: $artifact}; reproduce with: $fuzzer ${artifact:-<input>}"
    [ "$status" -ne 0 ] || status=1
    exit "$status"
fi
if [ -z "$runs" ]; then
    echo "fuzz: FAILED: libFuzzer did not finish normally"
    exit 1
fi
echo "fuzz: ${runs% *} runs in ${runs#* } s, no crash"
