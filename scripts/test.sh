#!/usr/bin/env bash
# Installs what the tests need (Debian's python3-torch, the gloo reference) and runs every test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
py="${JCCL_TORCH_PYTHON:-/usr/bin/python3}"
if ! "$py" -c "import torch" >/dev/null 2>&1; then
  echo "test.sh: installing python3-torch (the gloo reference)..." >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q python3-torch
fi
"$py" -c "import torch; print('test.sh: gloo reference: torch', torch.__version__, 'at $py')"
mvn -B verify "$@"
