# Sourced by ./jccl and scripts/test.sh: installs Debian packages that are missing, with apt-get (through sudo
# unless this runs as root), saying what it installs. Usage: install_missing PACKAGE... (none: nothing to do).
install_missing() {
  [ $# -gt 0 ] || return 0
  local sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "jccl: missing $*, and this machine has no apt-get: install them (a JDK 17 or newer, Maven, torch) by hand" >&2
    exit 1
  fi
  echo "jccl: installing $*..." >&2
  $sudo_cmd apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "$@" >&2
}

# The packages a fresh machine lacks to build jccl: a JDK (Debian's default, 17 on bookworm) and Maven.
build_packages() {
  command -v java >/dev/null 2>&1 || echo default-jdk-headless
  command -v mvn >/dev/null 2>&1 || echo maven
  return 0
}
