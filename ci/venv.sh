#!/usr/bin/env bash
# Creates the project's Python virtual environment .venv/ at the repository root (with
# /usr/bin/python3 -m venv; Debian's python3-venv, installed by ci/setup.sh) and installs the
# PyPI packages the tests use: numpy, ml_dtypes, safetensors, pytest (and, opt-in, torch with
# FPCONFORM_WITH_TORCH=1, jax + jaxlib with FPCONFORM_WITH_JAX=1). Only what is missing is
# installed: when everything imports already, this takes well under a second. Safe to run any
# number of times. Prints the venv's python path on its last line of stdout.
#   bash ci/venv.sh            # -> /path/to/repo/.venv/bin/python
#   FPCONFORM_VENV=/elsewhere bash ci/venv.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${FPCONFORM_VENV:-$PWD/.venv}
base_python=${FPCONFORM_BASE_PYTHON:-/usr/bin/python3}
packages=(numpy ml_dtypes safetensors pytest nanobind scikit-build-core)
# Import names of the packages above, in the same order.
modules=(numpy ml_dtypes safetensors pytest nanobind scikit_build_core)
# Opt-in references (issue "Fidelity" part 2): their tests skip, saying so, without them.
# torch from PyPI is large (the Linux wheel pulls its CUDA libraries: several GB).
if [ "${FPCONFORM_WITH_TORCH:-0}" = 1 ]; then packages+=(torch); modules+=(torch); fi
if [ "${FPCONFORM_WITH_JAX:-0}" = 1 ]; then packages+=(jax jaxlib); modules+=(jax jaxlib); fi

if [ ! -x "$venv/bin/python" ]; then
  echo "fpconform venv: creating $venv with $base_python" >&2
  "$base_python" -m venv "$venv"
fi
py="$venv/bin/python"

# One interpreter start checks every package (find_spec does not import them).
read -r -a missing <<<"$("$py" -c '
import importlib.util, sys
n = (len(sys.argv) - 1) // 2
pkgs, mods = sys.argv[1:1 + n], sys.argv[1 + n:]
print(" ".join(p for p, m in zip(pkgs, mods) if importlib.util.find_spec(m) is None))
' "${packages[@]}" "${modules[@]}")"
if [ ${#missing[@]} -gt 0 ]; then
  echo "fpconform venv: installing ${missing[*]} from PyPI" >&2
  "$py" -m pip install --quiet --disable-pip-version-check "${missing[@]}" >&2
fi
echo "$py"
