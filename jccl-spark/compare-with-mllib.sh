#!/usr/bin/env bash
# Trains the logistic regression of LogisticRegressionExample with jccl (gradient descent in one barrier stage) and
# with MLlib in one Spark application and prints the table of docs/spark.md.
#   bash jccl-spark/compare-with-mllib.sh [MASTER] [PARTITIONS] [ROWS_PER_PARTITION] [FEATURES]
# MASTER: local[4] (tasks are threads of one JVM) or local-cluster[W,C,MB] (W executor JVMs started from the Maven
# jars in Spark's test mode: they get this JVM's class path, no SPARK_HOME needed). Run it after
# `mvn -pl jccl-core,jccl-spark -am install -DskipTests`; the first run needs the network (below). Extra JVM
# options (Spark settings as -Dspark.*) in JAVA_OPTS, e.g. JAVA_OPTS=-Dspark.executorEnv.JCCL_TRANSPORT=tcp for
# TCP between the executors.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
master="${1:-local[4]}"
cp_file=target/compare-classpath.txt
# the class path from maven-dependency-plugin, pinned (no module of the build declares it, so a bare
# dependency:build-classpath needs the plugin group's metadata): offline where the plugin is in the local
# repository, else online, once, to fetch it (a fresh machine has never needed it)
classpath=(org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath -Dmdep.outputFile="$cp_file"
           -Dmdep.includeScope=test)
if ! mvn -B -q -o "${classpath[@]}" >/dev/null 2>&1; then
  mvn -B -q "${classpath[@]}" >/dev/null
fi
# the options Spark's launcher gives the JVMs it starts (Spark needs them on Java 17, jccl does not): the same
# list as the surefire argLine in pom.xml
opens=$(sed -n '/<argLine>/,/<\/argLine>/p' pom.xml | grep -o -- '--add-opens=[^ <]*\|-D[^ <]*' | tr '\n' ' ')
props=()
if [[ "$master" == local-cluster* ]]; then
  mkdir -p target/spark-test-home
  props=(-Dspark.testing=true -Dspark.test.home="$PWD/target/spark-test-home"
         -Dspark.executorEnv.SPARK_TESTING=1 -Dspark.executorEnv.SPARK_SCALA_VERSION=2.13)
fi
# shellcheck disable=SC2086 # $opens and $JAVA_OPTS are lists of options
exec java -Xmx4g $opens ${JAVA_OPTS:-} "${props[@]}" -Dlog4j2.configurationFile="$PWD/src/test/resources/log4j2.properties" \
  -cp "$PWD/target/classes:$(cat "$cp_file")" io.jccl.spark.examples.LogisticRegressionExample "$master" "${@:2}"
