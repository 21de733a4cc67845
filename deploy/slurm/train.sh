#!/usr/bin/env bash
# train.sh RUN SHARDS FIRST LAST [CONFIG] — submit training steps FIRST..LAST of the run folder RUN
# (on a filesystem every node shares) to Slurm, each step's rollout as a job array of SHARDS
# tasks (step.sbatch) and the rest of the step as a job waiting for the array (rest.sbatch); each
# step's array waits for the previous step. It creates the run first when RUN has no run.yaml
# (from CONFIG, or the defaults). It submits and returns; see docs/CLUSTERS.md.
#
#   deploy/slurm/train.sh /shared/runs/demo 8 1 240 my-config.yaml
#
# EVOSTEER_BIN (default: evosteer on PATH) names the binary, on the shared filesystem too or
# installed on every node; extra sbatch options (a partition, an account) go in SBATCH_ARGS.
set -euo pipefail
run=${1:?usage: train.sh RUN SHARDS FIRST LAST [CONFIG]}
shards=${2:?usage: train.sh RUN SHARDS FIRST LAST [CONFIG]}
first=${3:?usage: train.sh RUN SHARDS FIRST LAST [CONFIG]}
last=${4:?usage: train.sh RUN SHARDS FIRST LAST [CONFIG]}
config=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
bin=${EVOSTEER_BIN:-evosteer}
read -r -a extra <<<"${SBATCH_ARGS:-}"

if [[ ! -f "$run/run.yaml" ]]; then
  "$bin" init --run "$run" ${config:+--config "$config"}
elif [[ -n "$config" ]]; then
  echo "train.sh: $run is an existing run: its configuration is fixed; CONFIG applies only to a new run" >&2
  exit 2
fi

after=() # the previous step's job: the next array waits for it
for ((k = first; k <= last; k++)); do
  env=ALL,EVOSTEER_RUN=$run,EVOSTEER_STEP=$k,EVOSTEER_SHARDS=$shards,EVOSTEER_BIN=$bin
  array=$(sbatch --parsable ${extra[@]+"${extra[@]}"} ${after[@]+"${after[@]}"} --array=1-"$shards" --export="$env" "$here/step.sbatch")
  array=${array%%;*} # --parsable prints "jobid[;cluster]"
  rest=$(sbatch --parsable ${extra[@]+"${extra[@]}"} --dependency=afterok:"$array" --export="$env" "$here/rest.sbatch")
  rest=${rest%%;*}
  echo "step $k: rollout array $array (shards 1-$shards), then step job $rest"
  after=(--dependency=afterok:"$rest")
done
