#!/usr/bin/env bash
# example.sh: the installed package end to end. Builds nelu, installs it to a temporary prefix,
# then configures, builds and runs examples/consumer and examples/contacts against that prefix
# (find_package(nelu) through CMAKE_PREFIX_PATH; nelu_add_solver() compiles ur5e_id and ur5e_fd, and
# the Mini Cheetah's contact solver with its batch forms and derivatives, at build time). Exits
# non-zero when any step fails, the consumer's id -> fd round trip does not recover qdd, or a check
# of the contacts example fails (examples/contacts/README.md).
# The build installed is NELU_BUILD_DIR's (scripts/lib.sh), configured and built as there; NELU does
# not apply: the package is the whole build's (nelu, the runtime headers, the CMake files).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$root"
nelu_build "$build_dir" nelu

tmp="$(mktemp -d "${TMPDIR:-/tmp}/nelu-example.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
echo "example: installed nelu to $tmp/prefix:"
(cd "$tmp/prefix" && find . -type f | sort | sed 's|^\./|  |')

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S "$root/examples/consumer" -B "$tmp/consumer" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release | grep -F 'nelu ' || true
if ! cmake --build "$tmp/consumer" -j"$(nproc)" >"$tmp/consumer.log" 2>&1; then
  cat "$tmp/consumer.log" >&2
  echo "example: FAILED to build examples/consumer against the installed package" >&2
  exit 1
fi
"$tmp/consumer/consumer"

# examples/contacts: a horizon of the Mini Cheetah's contact dynamics and derivatives in one batch
# call (nelu_add_solver with BATCH and DERIVATIVES; g++ takes about a minute on its solver)
cmake -S "$root/examples/contacts" -B "$tmp/contacts" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release | grep -F 'nelu ' || true
if ! cmake --build "$tmp/contacts" -j"$(nproc)" >"$tmp/contacts.log" 2>&1; then
  cat "$tmp/contacts.log" >&2
  echo "example: FAILED to build examples/contacts against the installed package" >&2
  exit 1
fi
"$tmp/contacts/contacts_horizon"
echo "example: ok"
