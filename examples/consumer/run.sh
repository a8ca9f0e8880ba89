#!/usr/bin/env bash
# Builds this user's project against the jccl jars installed in the local Maven repository (mvn install in the
# repository root first) and runs each program twice: on the module path (module com.example.consumer requires
# io.jccl.core) and on the class path (the same sources built without module-info). Fails when a build or a run
# fails, when a run's output lacks its expected line, when jccl was not loaded where it should be (the module
# io.jccl.core, or the class path), or when SLF4J warns (the provider slf4j-simple is on both paths).
# Arguments go to Maven: bash examples/consumer/run.sh -o builds offline.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
mvn_args=(-B -q -Dstyle.color=never "$@")

# This project must depend on jccl exactly as the README says: its first XML snippet under "Adding jccl to a build"
# (whitespace and comments aside, ${jccl.version} read as the version of the jccl build in ../..) is in pom.xml.
perl -e '
  sub slurp { open my $f, "<", $_[0] or die "run.sh: cannot read $_[0]\n"; local $/; return <$f>; }
  sub squash { my $x = shift; $x =~ s/<!--.*?-->//gs; $x =~ s/\s+//g; return $x; }
  my ($readme, $pom, $root) = (slurp("../../README.md"), slurp("pom.xml"), slurp("../../pom.xml"));
  my ($version) = $root =~ m{<artifactId>jccl-parent</artifactId>\s*<version>([^<]+)</version>}
      or die "run.sh: no version in ../../pom.xml\n";
  my ($snippet) = $readme =~ m{^## Adding jccl to a build\n.*?^```xml\n(.*?)^```}ms
      or die "run.sh: no XML snippet under \"## Adding jccl to a build\" in README.md\n";
  my ($mine) = $pom =~ m{<jccl\.version>([^<]+)</jccl\.version>} or die "run.sh: no jccl.version in pom.xml\n";
  $mine eq $version or die "run.sh: pom.xml has jccl.version $mine, the build in ../.. is $version\n";
  $pom =~ s/\$\{jccl\.version\}/$version/g;
  index(squash($snippet), "<version>$version</version>") >= 0
      or die "run.sh: the README snippet does not name version $version\n";
  index(squash($pom), squash($snippet)) >= 0
      or die "run.sh: pom.xml does not contain the README snippet (## Adding jccl to a build)\n";
'

rm -rf target                                # lib/ would keep a jar newer than the one installed
mvn "${mvn_args[@]}" package                 # target/jccl-consumer.jar, target/lib: the module path
mvn "${mvn_args[@]}" -P classpath package    # target/classpath/...: the class path

module=com.example.consumer
module_path="target/jccl-consumer.jar:target/lib"
class_path="target/classpath/jccl-consumer.jar:target/classpath/lib/*"

# java on each path: modulepath_java MAIN [ARGS...], classpath_java MAIN [ARGS...] (MAIN a class of this project)
modulepath_java() { java -p "$module_path" -m "$module/$1" "${@:2}"; }
classpath_java() { java -cp "$class_path" "$@"; }

# check PATH_KIND EXPECTED_REGEX MAIN [ARGS...]: runs MAIN on that path, prints its output, and fails unless it
# exits 0, prints a line matching EXPECTED_REGEX, says jccl came from the right place, and SLF4J stayed quiet
check() {
  local kind="$1" expected="$2" out status=0
  shift 2
  out="$("${kind}_java" "$@" 2>&1)" || status=$?
  printf '%s\n' "$out" | sed "s/^/[$kind] /"
  local where="jccl in module io.jccl.core"
  [ "$kind" = classpath ] && where="jccl on the class path"
  if [ "$status" -ne 0 ]; then
    echo "run.sh: $1 on the ${kind/path/ path} exited with $status" >&2
    exit 1
  fi
  if ! printf '%s\n' "$out" | grep -Eq "$expected"; then
    echo "run.sh: $1 on the ${kind/path/ path} did not print /$expected/" >&2
    exit 1
  fi
  if ! printf '%s\n' "$out" | grep -q "$where"; then
    echo "run.sh: $1 on the ${kind/path/ path}: expected '$where'" >&2
    exit 1
  fi
  if printf '%s\n' "$out" | grep -q '^SLF4J'; then
    echo "run.sh: $1 on the ${kind/path/ path}: SLF4J found no provider or more than one" >&2
    exit 1
  fi
}

# check_job PATH_KIND RANKS MAIN: RANKS processes of MAIN on that path, meeting through a new file:// store
# (torch's init_process_group in Java form: Jccl.initProcessGroup); fails unless every rank exits 0 and says so
check_job() {
  local kind="$1" world="$2" main="$3" store pids=() status=0
  store="$(mktemp -d)"
  # the job secret every rank proves to the others (jccl launch would make one)
  export JCCL_SECRET="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  for ((r = 0; r < world; r++)); do
    "${kind}_java" "$main" "file://$store/rendezvous" "$r" "$world" > "$store/rank$r.out" 2>&1 &
    pids+=($!)
  done
  for ((r = 0; r < world; r++)); do
    wait "${pids[$r]}" || status=$?
    sed "s/^/[$kind rank $r] /" "$store/rank$r.out"
    if [ "$status" -ne 0 ] || ! grep -q "^${main##*.}: rank $r of $world" "$store/rank$r.out" \
        || grep -q '^SLF4J' "$store/rank$r.out"; then
      echo "run.sh: rank $r of $main on the ${kind/path/ path} failed (status $status)" >&2
      rm -rf "$store"
      exit 1
    fi
  done
  rm -rf "$store"
}

# each program on both paths (add a program here)
for kind in modulepath classpath; do
  check "$kind" '^AllReduceSum: 4 ranks, allReduce SUM of 1024 floats = 10\.0 on every rank' \
    com.example.consumer.AllReduceSum
  check_job "$kind" 3 com.example.consumer.ProcessGroupSum
done
echo "run.sh: the consumer project ran on the module path and on the class path"
