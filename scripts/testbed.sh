#!/usr/bin/env bash
# The multi-host test bed: the script itself ships in jccl.jar (jccl bench/verify --hosts use it); this wrapper
# runs it from the source tree. Usage: see the script's header (scripts/testbed.sh with no arguments prints it).
exec bash "$(dirname "$0")/../jccl-cli/src/main/resources/io/jccl/launch/testbed.sh" "$@"
