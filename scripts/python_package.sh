#!/usr/bin/env bash
# python_package.sh: the nelu Python package (python/, docs/python.md) installed into the virtual
# environment .venv of the repository, with Debian's NumPy (system site packages) and nothing
# fetched: the README's "From Python" command. Run by scripts/setup.sh, and by scripts/test.sh
# before pytest (a reinstall: the tests run the working tree's package).
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 -m venv --system-site-packages .venv
.venv/bin/pip install --quiet --no-build-isolation --no-index ./python
