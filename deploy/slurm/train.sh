#!/usr/bin/env bash
# train.sh RUN SHARDS FIRST LAST [CONFIG [TASKFILE...]] — train steps FIRST..LAST of the run
# folder RUN (on a filesystem every node shares) on Slurm (docs/CLUSTERS.md). When RUN has no
# run.yaml it submits init.sbatch, which creates the run on a compute node from CONFIG and the
# task files (--tasks) and then submits step FIRST; otherwise it submits step FIRST itself
# (submit.sh). Each step is a job array of SHARDS tasks (step.sbatch) and a job for the rest of
# the step that starts when the array has ended however its tasks ended (afterany) — it runs
# the shards that are missing — and then submits the next step: one step is queued at a time
# (SHARDS + 1 jobs), not every step at once, so site limits such as MaxSubmitJobs hold whatever
# LAST is. The last step's job checks the whole run (`evosteer train --steps LAST`).
#
#   deploy/slurm/train.sh /shared/runs/demo 8 1 240 my-config.yaml tasks.jsonl
#
# EVOSTEER_BIN (default: evosteer on PATH) names the binary, on the shared filesystem too or
# installed on every node; this folder must be on the shared filesystem too (the jobs submit
# the next step with its scripts); extra sbatch options (a partition, an account) go in
# SBATCH_ARGS; EVOSTEER_ARRAY_LIMIT=M throttles each array to M running tasks (%M).
set -euo pipefail
usage='usage: train.sh RUN SHARDS FIRST LAST [CONFIG [TASKFILE...]]'
run=${1:?$usage}
shards=${2:?$usage}
first=${3:?$usage}
last=${4:?$usage}
shift 4
config=${1:-}
(($# > 0)) && shift
here=$(cd "$(dirname "$0")" && pwd)
abs() { [[ $1 == /* ]] && echo "$1" || echo "$PWD/$1"; }
export EVOSTEER_RUN=$(abs "$run") EVOSTEER_SHARDS=$shards EVOSTEER_LAST=$last
export EVOSTEER_BIN=${EVOSTEER_BIN:-evosteer} EVOSTEER_DEPLOY=$here SBATCH_ARGS=${SBATCH_ARGS:-}
read -r -a extra <<<"$SBATCH_ARGS"

if [[ -f "$EVOSTEER_RUN/run.yaml" ]]; then
  if [[ -n "$config" ]]; then
    echo "train.sh: $run is an existing run: its configuration and tasks are fixed; CONFIG and TASKFILE apply only to a new run" >&2
    exit 2
  fi
  exec "$here/submit.sh" "$first"
fi
args=()
[[ -n "$config" ]] && args+=(--config "$(abs "$config")")
for f in "$@"; do args+=(--tasks "$(abs "$f")"); done
init=$(sbatch --parsable ${extra[@]+"${extra[@]}"} --export=ALL,EVOSTEER_STEP="$first" "$here/init.sbatch" ${args[@]+"${args[@]}"})
echo "init job ${init%%;*} (evosteer init ${args[*]}), which submits step $first when the run exists"
