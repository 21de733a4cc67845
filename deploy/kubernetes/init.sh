#!/usr/bin/env bash
# init.sh CONFIG TASKFILE... — create the run EVOSTEER_RUN on the cluster (docs/CLUSTERS.md):
# the configuration and task files go into the ConfigMap EVOSTEER_INPUTS (default
# evosteer-inputs; a ConfigMap holds 1 MiB at most), then init-job.yaml runs
# `evosteer init --run $EVOSTEER_RUN --config /inputs/CONFIG --tasks /inputs/TASKFILE,...` in a pod
# mounting the run claim, and init.sh waits for it. Needs kubectl, envsubst, and EVOSTEER_RUN,
# EVOSTEER_IMAGE and EVOSTEER_PVC exported (lib.sh names the other parameters).
set -euo pipefail
usage='usage: init.sh CONFIG TASKFILE...'
config=${1:?$usage}
shift
(($# > 0)) || { echo "$usage" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
need_secret
from=(--from-file="$config")
tasks=() seen=" $(basename "$config") "
for f in "$@"; do
  b=$(basename "$f")
  if [[ $seen == *" $b "* || $b == *,* ]]; then
    echo "init.sh: $f: two inputs named $b, or a comma in the name (--tasks separates files by commas)" >&2
    exit 2
  fi
  seen+="$b "
  from+=(--from-file="$f")
  tasks+=("/inputs/$b")
done
kubectl create configmap "$EVOSTEER_INPUTS" "${from[@]}" --dry-run=client -o yaml | kubectl apply -f -
EVOSTEER_CONFIG=/inputs/$(basename "$config")
EVOSTEER_TASKS=$(IFS=,; echo "${tasks[*]}")
export EVOSTEER_CONFIG EVOSTEER_TASKS
kubectl delete job evosteer-init --ignore-not-found --wait=true
render "$here/init-job.yaml" | kubectl apply -f -
if wait_job evosteer-init; then
  echo "initialised $EVOSTEER_RUN (kubectl logs job/evosteer-init)"
else
  echo "init failed: kubectl logs job/evosteer-init" >&2
  exit 1
fi
