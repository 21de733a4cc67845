#!/usr/bin/env bash
# train.sh FIRST LAST — run training steps FIRST..LAST of a run on Kubernetes, one after another:
# for each step, the Indexed Job of its sharded rollout from step-job.yaml, a wait for it to
# complete, then the Job of the rest of the step, and a wait for that (docs/CLUSTERS.md). It
# needs kubectl and envsubst, and EVOSTEER_SHARDS, EVOSTEER_RUN, EVOSTEER_IMAGE and EVOSTEER_PVC
# exported (step-job.yaml names them); EVOSTEER_WAIT (default 24h) bounds each wait. The run is
# created beforehand (`evosteer init --run $EVOSTEER_RUN` in a pod mounting the claim).
set -euo pipefail
first=${1:?usage: train.sh FIRST LAST}
last=${2:?usage: train.sh FIRST LAST}
: "${EVOSTEER_SHARDS:?}" "${EVOSTEER_RUN:?}" "${EVOSTEER_IMAGE:?}" "${EVOSTEER_PVC:?}"
here=$(cd "$(dirname "$0")" && pwd)
wait=${EVOSTEER_WAIT:-24h}
vars='${EVOSTEER_STEP} ${EVOSTEER_SHARDS} ${EVOSTEER_RUN} ${EVOSTEER_IMAGE} ${EVOSTEER_PVC}'
for ((k = first; k <= last; k++)); do
  export EVOSTEER_STEP=$k
  for part in rollout step; do
    name=evosteer-$part-step-$k
    [[ $part == step ]] && name=evosteer-step-$k
    envsubst "$vars" <"$here/step-job.yaml" | kubectl apply -f - -l evosteer/part=$part
    kubectl wait --for=condition=complete --timeout="$wait" "job/$name"
  done
done
