#!/usr/bin/env bash
# train.sh FIRST LAST — run training steps FIRST..LAST of a run on Kubernetes, one after another
# (docs/CLUSTERS.md): for each step, the Indexed Job of its sharded rollout from step-job.yaml, a
# wait for it to finish, then the Job of the rest of the step (which runs any shard the first
# Job could not, and merges), and a wait for that. It needs kubectl and envsubst, and
# EVOSTEER_SHARDS, EVOSTEER_RUN, EVOSTEER_IMAGE and EVOSTEER_PVC exported; lib.sh gives the
# other parameters and their defaults (EVOSTEER_SECRET, EVOSTEER_CPU, EVOSTEER_MEMORY,
# EVOSTEER_SECCOMP) and EVOSTEER_WAIT (seconds, default 86400) bounds each wait. The run is
# created beforehand on the cluster with init.sh.
#
# Run again after a stop, it carries on: a step whose Jobs are complete is skipped, a failed Job
# is deleted and applied again (the shards done are kept), a running one is waited for.
set -euo pipefail
first=${1:?usage: train.sh FIRST LAST}
last=${2:?usage: train.sh FIRST LAST}
: "${EVOSTEER_SHARDS:?export EVOSTEER_SHARDS, the shards of each step}"
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
need_secret
for ((k = first; k <= last; k++)); do
  export EVOSTEER_STEP=$k
  for part in rollout step; do
    name=evosteer-$part-step-$k
    [[ $part == step ]] && name=evosteer-step-$k
    case $(job_state "$name") in
    Complete) echo "step $k: job/$name already complete"; continue ;;
    Failed) kubectl delete job "$name" --wait=true ;;
    esac
    # Applying an existing running Job changes nothing; a new one starts.
    render "$here/step-job.yaml" | kubectl apply -f - -l evosteer/part=$part
    rc=0
    wait_job "$name" || rc=$?
    if ((rc == 0)); then
      echo "step $k: job/$name complete"
    elif [[ $part == rollout && $rc == 1 ]]; then
      # Some shard failed its tries: the step Job runs it again itself before merging.
      echo "step $k: job/$name failed (kubectl get job $name -o jsonpath='{.status.failedIndexes}'); the step job runs the missing shards" >&2
    else
      echo "step $k: job/$name did not complete: kubectl logs job/$name; fix and run train.sh $k $last again" >&2
      exit 1
    fi
  done
done
