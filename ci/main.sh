#!/usr/bin/env bash
# The README's main-job command: installs what is missing, builds, and runs the main job.
# Until the tolerance-table work lands, the main job prints the format table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
BUILD_DIR=build bash ci/build.sh >/dev/null
./build/cli/fpconform formats
