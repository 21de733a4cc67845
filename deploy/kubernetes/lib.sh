# Sourced by train.sh and init.sh (docs/CLUSTERS.md): the manifests' parameters with their
# defaults, the envsubst that fills them in, and a wait for a Job that ends on either outcome.
# shellcheck shell=bash

# Parameters the manifests name; those without a default must be exported by the caller.
: "${EVOSTEER_RUN:?export EVOSTEER_RUN, the run folder under /runs (e.g. /runs/demo)}"
: "${EVOSTEER_IMAGE:?export EVOSTEER_IMAGE, an image built from deploy/Dockerfile}"
: "${EVOSTEER_PVC:?export EVOSTEER_PVC, the ReadWriteMany claim holding /runs}"
export EVOSTEER_SECRET=${EVOSTEER_SECRET:-evosteer-keys} # its keys become the pods' environment
export EVOSTEER_CPU=${EVOSTEER_CPU:-1}                   # requests of each pod: a shard mostly waits on its model server
export EVOSTEER_MEMORY=${EVOSTEER_MEMORY:-2Gi}
export EVOSTEER_SECCOMP=${EVOSTEER_SECCOMP:-RuntimeDefault} # Unconfined lets the sandbox create its namespaces
export EVOSTEER_INPUTS=${EVOSTEER_INPUTS:-evosteer-inputs}  # the ConfigMap init.sh makes of the config and task files
export EVOSTEER_STEP=${EVOSTEER_STEP:-0} EVOSTEER_SHARDS=${EVOSTEER_SHARDS:-1}
export EVOSTEER_CONFIG=${EVOSTEER_CONFIG:-} EVOSTEER_TASKS=${EVOSTEER_TASKS:-}
wait_s=${EVOSTEER_WAIT:-86400} # seconds a Job may run before the driver gives up on it
poll_s=${EVOSTEER_POLL:-10}
kube_vars='${EVOSTEER_STEP} ${EVOSTEER_SHARDS} ${EVOSTEER_RUN} ${EVOSTEER_IMAGE} ${EVOSTEER_PVC} ${EVOSTEER_SECRET} ${EVOSTEER_CPU} ${EVOSTEER_MEMORY} ${EVOSTEER_SECCOMP} ${EVOSTEER_INPUTS} ${EVOSTEER_CONFIG} ${EVOSTEER_TASKS}'

# render FILE: the manifest with the parameters above filled in (only those: the pods' own shell
# variables are left alone).
render() { envsubst "$kube_vars" <"$1"; }

# need_secret: stop before any pod starts when the Secret the pods take their keys from is absent
# (a pod would otherwise never start: CreateContainerConfigError).
need_secret() {
  if ! kubectl get secret "$EVOSTEER_SECRET" -o name >/dev/null; then
    echo "no Secret $EVOSTEER_SECRET: create it with the variables your configuration's api_key_env settings name," >&2
    echo "  kubectl create secret generic $EVOSTEER_SECRET --from-literal=VLLM_KEY=... (an empty Secret for a server without keys)" >&2
    exit 2
  fi
}

# job_state NAME: Complete, Failed, Running or Absent.
job_state() {
  local conds
  if ! conds=$(kubectl get job "$1" -o 'jsonpath={range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}' 2>/dev/null); then
    echo Absent
  elif [[ " $conds " == *" Complete "* ]]; then
    echo Complete
  elif [[ " $conds " == *" Failed "* ]]; then
    echo Failed
  else
    echo Running
  fi
}

# wait_job NAME: wait until the Job is Complete (0) or Failed (1), at most EVOSTEER_WAIT seconds (2).
# `kubectl wait --for=condition=complete` alone would wait out its timeout on a failed Job.
wait_job() {
  local start=$SECONDS state
  while :; do
    state=$(job_state "$1")
    case $state in
    Complete) return 0 ;;
    Failed) return 1 ;;
    Absent) echo "job/$1 is gone (deleted, or removed by ttlSecondsAfterFinished)" >&2; return 2 ;;
    esac
    if ((SECONDS - start >= wait_s)); then
      echo "job/$1 still running after ${wait_s}s (EVOSTEER_WAIT)" >&2
      return 2
    fi
    sleep "$poll_s"
  done
}
