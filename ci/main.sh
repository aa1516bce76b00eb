#!/usr/bin/env bash
# The README's main-job command: installs what is missing, builds, and runs the main job: the
# standard tolerance table (`fpconform tolerance`, sweep file reports/standard_sweep.toml) into
# ./fpconform-report/ (report.md, report.csv, report.json, report.html, ...). report.md is
# printed at the end. Extra arguments go to `fpconform tolerance` (e.g. --quick, --threads 4).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
BUILD_DIR=build bash ci/build.sh >/dev/null
out=${FPCONFORM_REPORT_DIR:-fpconform-report}
./build/cli/fpconform tolerance --out "$out" "$@"
cat "$out/report.md"
echo "fpconform: the report is in $out/ (report.md, report.html, report.csv, report.json)" >&2
