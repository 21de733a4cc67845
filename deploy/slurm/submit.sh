#!/usr/bin/env bash
# submit.sh K — submit training step K (docs/CLUSTERS.md): its rollout as a job array of
# EVOSTEER_SHARDS tasks (step.sbatch), and the rest of the step (rest.sbatch) as a job that
# starts when the array has ended, however its tasks ended (--dependency=afterany): `evosteer
# step` runs any shard that is missing, then merges. rest.sbatch submits step K+1 itself when
# step K is done, so the queue holds one step at a time (N + 1 jobs), whatever LAST is.
# train.sh, init.sbatch and rest.sbatch call it, with EVOSTEER_RUN, EVOSTEER_SHARDS,
# EVOSTEER_LAST, EVOSTEER_BIN and EVOSTEER_DEPLOY in the environment (--export=ALL carries them
# into the jobs). EVOSTEER_ARRAY_LIMIT=M adds the array throttle %M (at most M shards running at
# once, e.g. to spare a model server); SBATCH_ARGS adds sbatch options.
set -euo pipefail
k=${1:?usage: submit.sh K}
: "${EVOSTEER_RUN:?}" "${EVOSTEER_SHARDS:?}" "${EVOSTEER_LAST:?}" "${EVOSTEER_DEPLOY:?}"
read -r -a extra <<<"${SBATCH_ARGS:-}"
range=1-$EVOSTEER_SHARDS${EVOSTEER_ARRAY_LIMIT:+%$EVOSTEER_ARRAY_LIMIT}
array=$(sbatch --parsable ${extra[@]+"${extra[@]}"} --array="$range" --export=ALL,EVOSTEER_STEP="$k" "$EVOSTEER_DEPLOY/step.sbatch")
array=${array%%;*} # --parsable prints "jobid[;cluster]"
rest=$(sbatch --parsable ${extra[@]+"${extra[@]}"} --dependency=afterany:"$array" --export=ALL,EVOSTEER_STEP="$k" "$EVOSTEER_DEPLOY/rest.sbatch")
rest=${rest%%;*}
echo "step $k: rollout array $array (shards $range), then step job $rest (afterany:$array)"
