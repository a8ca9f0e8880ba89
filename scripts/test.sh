#!/usr/bin/env bash
# Installs what the tests need (a JDK and Maven, Debian's python3-torch for the gloo reference, iproute2 for the
# multi-host test bed, Open MPI for the benchmark's peer) and runs every test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CI="${CI:-}"
. scripts/prereqs.sh
py="${JCCL_TORCH_PYTHON:-/usr/bin/python3}"
packages=($(build_packages))                                               # a JDK and Maven
"$py" -c "import torch" >/dev/null 2>&1 || packages+=(python3-torch)        # the gloo reference
command -v ip >/dev/null 2>&1 || packages+=(iproute2)                      # the multi-host test bed
command -v nsenter >/dev/null 2>&1 || packages+=(util-linux)
command -v mpirun >/dev/null 2>&1 || packages+=(openmpi-bin libopenmpi-dev) # bench --compare mpi
install_missing "${packages[@]}"
"$py" -c "import torch; print('test.sh: gloo reference: torch', torch.__version__, 'at $py')"
# Maven 3.8's jansi prints colour resets (ESC[0m) even with -B; this JVM option stops it
export MAVEN_OPTS="-Djansi.noreset=true ${MAVEN_OPTS:-}"
mvn -B install "$@"   # verify, then the jars into the local repository for the consumer project below
# the packaged tool answers -V with the pom's version (VersionTest checks the provider; this, the shaded jar)
version="$(java -jar jccl-cli/target/jccl.jar -V)"
expected="jccl $(sed -n 's:.*<version>\(.*\)</version>.*:\1:p' pom.xml | head -n 1)"
if [ "$version" != "$expected" ]; then
  echo "test.sh: jccl -V printed '$version', expected '$expected'" >&2
  exit 1
fi

# A user's project (examples/consumer) takes the installed jars through the BOM, as the README says, and runs a
# 4-rank allreduce on the module path (requires io.jccl.core) and on the class path.
bash examples/consumer/run.sh

# The threads and shared-memory tests again on the newest JDK this machine kind ships (Temurin 25), failing on any
# JVM warning line (such as the one sun.misc.Unsafe draws on JDK 24 and later).
jdk25="${JCCL_JDK25_HOME:-$(ls -d /usr/lib/jvm/temurin-25* 2>/dev/null | head -n 1)}"
if [ -z "$jdk25" ] || [ ! -x "$jdk25/bin/java" ]; then
  if [ "${CI,,}" = "true" ]; then
    echo "test.sh: no Temurin 25 JDK under /usr/lib/jvm (set JCCL_JDK25_HOME); CI must run the JDK 25 tests" >&2
    exit 1
  fi
  echo "test.sh: no Temurin 25 JDK found: skipping the JDK 25 run (CI runs it)" >&2
else
  echo "test.sh: the core tests on $("$jdk25/bin/java" -version 2>&1 | head -n 1)"
  log=jccl-core/target/jdk25-tests.log
  mvn -B -o -pl jccl-core surefire:test -Djvm="$jdk25/bin/java" 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
  # and a 4-rank job of JVM processes over shared memory, as a user runs one
  jar=jccl-cli/target/jccl.jar
  "$jdk25/bin/java" -jar "$jar" launch -n 4 --transport shm -- "$jdk25/bin/java" -cp "$jar" \
    io.jccl.examples.AllReduceDemo 4096 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
  if grep -h "^WARNING:\|\] WARNING:" "$log" jccl-core/target/surefire-reports/*-output.txt 2>/dev/null | grep -q .; then
    echo "test.sh: a JVM of the JDK 25 run printed a warning:" >&2
    grep -h "^WARNING:\|\] WARNING:" "$log" jccl-core/target/surefire-reports/*-output.txt 2>/dev/null | sort | uniq -c >&2
    exit 1
  fi
fi

