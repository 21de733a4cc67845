package evosteer_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// job is the part of a Kubernetes batch/v1 Job that the manifests of deploy/kubernetes set,
// decoded strictly: a misspelt or misplaced field is an error.
type job struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode          string `yaml:"completionMode"`
		Completions             int    `yaml:"completions"`
		Parallelism             int    `yaml:"parallelism"`
		BackoffLimit            *int   `yaml:"backoffLimit"`
		BackoffLimitPerIndex    *int   `yaml:"backoffLimitPerIndex"`
		TTLSecondsAfterFinished *int   `yaml:"ttlSecondsAfterFinished"`
		Template                struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy   string `yaml:"restartPolicy"`
	SecurityContext struct {
		RunAsNonRoot   bool `yaml:"runAsNonRoot"`
		RunAsUser      int  `yaml:"runAsUser"`
		RunAsGroup     int  `yaml:"runAsGroup"`
		FSGroup        int  `yaml:"fsGroup"`
		SeccompProfile struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	Containers []struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		EnvFrom []struct {
			SecretRef *struct {
				Name string `yaml:"name"`
			} `yaml:"secretRef"`
		} `yaml:"envFrom"`
		Resources struct {
			Requests map[string]string `yaml:"requests"`
		} `yaml:"resources"`
		SecurityContext struct {
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	} `yaml:"containers"`
	Volumes []kubeVolume `yaml:"volumes"`
}

// kubeVolume is a pod volume: a claim or a ConfigMap.
type kubeVolume struct {
	Name                  string `yaml:"name"`
	PersistentVolumeClaim *struct {
		ClaimName string `yaml:"claimName"`
	} `yaml:"persistentVolumeClaim"`
	ConfigMap *struct {
		Name string `yaml:"name"`
	} `yaml:"configMap"`
}

// kubeVars are the parameters as the tests fill them in.
var kubeVars = map[string]string{"EVOSTEER_STEP": "7", "EVOSTEER_SHARDS": "4", "EVOSTEER_RUN": "/runs/demo",
	"EVOSTEER_IMAGE": "registry.example/evosteer:v1", "EVOSTEER_PVC": "evosteer-runs", "EVOSTEER_SECRET": "evosteer-keys",
	"EVOSTEER_CPU": "1", "EVOSTEER_MEMORY": "2Gi", "EVOSTEER_SECCOMP": "RuntimeDefault", "EVOSTEER_INPUTS": "evosteer-inputs",
	"EVOSTEER_CONFIG": "/inputs/my.yaml", "EVOSTEER_TASKS": "/inputs/a.jsonl,/inputs/b.jsonl"}

// renderJobs renders a manifest as lib.sh's envsubst does — only the ${NAME}s of its list, every
// one of which must be one the tests fill in — and decodes its documents strictly.
func renderJobs(t *testing.T, file string) []job {
	t.Helper()
	lib, err := os.ReadFile(filepath.Join("deploy", "kubernetes", "lib.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^kube_vars='([^']*)'`).FindSubmatch(lib)
	if m == nil {
		t.Fatal("lib.sh has no kube_vars list")
	}
	listed := map[string]bool{}
	for _, v := range strings.Fields(string(m[1])) {
		name := strings.TrimSuffix(strings.TrimPrefix(v, "${"), "}")
		if _, ok := kubeVars[name]; !ok {
			t.Errorf("lib.sh fills in %s, which the test does not", v)
		}
		listed[name] = true
	}
	text, err := os.ReadFile(filepath.Join("deploy", "kubernetes", file))
	if err != nil {
		t.Fatal(err)
	}
	rendered := regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`).ReplaceAllStringFunc(string(text), func(ref string) string {
		name := ref[2 : len(ref)-1]
		if !listed[name] {
			t.Errorf("%s uses %s, which lib.sh's envsubst list leaves as it is", file, ref)
			return ref
		}
		return kubeVars[name]
	})
	dec := yaml.NewDecoder(strings.NewReader(rendered), yaml.Strict())
	var jobs []job
	for {
		var j job
		err := dec.Decode(&j)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// dockerUID is the uid of the image's user: the USER of deploy/Dockerfile's last stage.
func dockerUID(t *testing.T) int {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	users := regexp.MustCompile(`(?m)^USER\s+(\d+)`).FindAllStringSubmatch(string(text), -1)
	if len(users) == 0 {
		t.Fatal("deploy/Dockerfile sets no numeric USER")
	}
	uid, _ := strconv.Atoi(users[len(users)-1][1])
	return uid
}

// checkPod checks what every pod of the recipes needs: the image, the shell command, the
// Secret's keys as its environment, modest requests from the parameters, the image's
// unprivileged user with no capability and the seccomp parameter, the run claim at /runs.
func checkPod(t *testing.T, name string, spec podSpec, args string) {
	t.Helper()
	if spec.RestartPolicy != "Never" || len(spec.Containers) != 1 {
		t.Fatalf("%s: restartPolicy %q, %d containers", name, spec.RestartPolicy, len(spec.Containers))
	}
	sc := spec.SecurityContext
	if uid := dockerUID(t); !sc.RunAsNonRoot || sc.RunAsUser != uid || sc.RunAsUser == 0 || sc.RunAsGroup != uid || sc.FSGroup != uid || sc.SeccompProfile.Type != "RuntimeDefault" {
		t.Errorf("%s: pod securityContext %+v, want the image's uid %d, non-root, seccomp from EVOSTEER_SECCOMP", name, sc, uid)
	}
	c := spec.Containers[0]
	if c.Image != kubeVars["EVOSTEER_IMAGE"] || strings.Join(c.Command, " ") != "/bin/sh -c" || len(c.Args) != 1 || c.Args[0] != args {
		t.Errorf("%s: image %q, command %q, args %q, want args %q", name, c.Image, c.Command, c.Args, args)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "evosteer-keys" {
		t.Errorf("%s: envFrom %+v, want the Secret EVOSTEER_SECRET", name, c.EnvFrom)
	}
	if r := c.Resources.Requests; len(r) != 2 || r["cpu"] != "1" || r["memory"] != "2Gi" {
		t.Errorf("%s: requests %v, want EVOSTEER_CPU and EVOSTEER_MEMORY", name, r)
	}
	if p := c.SecurityContext.AllowPrivilegeEscalation; p == nil || *p || !slices.Equal(c.SecurityContext.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("%s: container securityContext %+v, want no privilege escalation and every capability dropped", name, c.SecurityContext)
	}
	claim := false
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(spec.Volumes, func(v kubeVolume) bool {
			return v.Name == m.Name
		})
		if i < 0 {
			t.Errorf("%s: mount %s has no volume", name, m.Name)
			continue
		}
		if v := spec.Volumes[i]; v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "evosteer-runs" && m.MountPath == "/runs" &&
			strings.HasPrefix(kubeVars["EVOSTEER_RUN"], m.MountPath+"/") {
			claim = true
		}
	}
	if !claim {
		t.Errorf("%s: the run folder is not on the claim: mounts %+v, volumes %+v", name, c.VolumeMounts, spec.Volumes)
	}
}

// The Kubernetes step recipe, rendered (N = 4, K = 7): an Indexed Job of N pods at once whose pod
// i runs `evosteer rollout ... --shard i/N` (JOB_COMPLETION_INDEX from 0), each index retried
// on its own, then a Job running `evosteer step`; both cleaned up a day after they finish, each
// selected by its evosteer/part label (train.sh applies them one at a time).
func TestKubernetesStepJob(t *testing.T) {
	jobs := renderJobs(t, "step-job.yaml")
	if len(jobs) != 2 {
		t.Fatalf("step-job.yaml holds %d documents, want the rollout Job and the step Job", len(jobs))
	}
	for k, want := range []struct{ part, name, mode, args string }{
		{"rollout", "evosteer-rollout-step-7", "Indexed", `exec evosteer rollout --run "/runs/demo" --step 7 --shard "$((JOB_COMPLETION_INDEX+1))/4"`},
		{"step", "evosteer-step-7", "", `exec evosteer step --run "/runs/demo" --step 7`},
	} {
		j := jobs[k]
		n := 1
		if want.part == "rollout" {
			n = 4
		}
		if j.APIVersion != "batch/v1" || j.Kind != "Job" || j.Metadata.Name != want.name {
			t.Errorf("document %d: %s %s %s, want batch/v1 Job %s", k, j.APIVersion, j.Kind, j.Metadata.Name, want.name)
		}
		if j.Metadata.Labels["evosteer/part"] != want.part || j.Metadata.Labels["evosteer/step"] != "7" || j.Spec.Template.Metadata.Labels["evosteer/part"] != want.part {
			t.Errorf("%s: labels %v", want.name, j.Metadata.Labels)
		}
		if j.Spec.CompletionMode != want.mode || j.Spec.Completions != n || j.Spec.Parallelism != n {
			t.Errorf("%s: completionMode %q, completions %d, parallelism %d", want.name, j.Spec.CompletionMode, j.Spec.Completions, j.Spec.Parallelism)
		}
		// The Indexed Job retries each shard on its own (backoffLimit then defaults to unbounded);
		// the step Job once.
		if want.part == "rollout" && (j.Spec.BackoffLimitPerIndex == nil || *j.Spec.BackoffLimitPerIndex != 2 || j.Spec.BackoffLimit != nil) ||
			want.part == "step" && (j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 1 || j.Spec.BackoffLimitPerIndex != nil) {
			t.Errorf("%s: backoffLimit %v, backoffLimitPerIndex %v", want.name, j.Spec.BackoffLimit, j.Spec.BackoffLimitPerIndex)
		}
		if ttl := j.Spec.TTLSecondsAfterFinished; ttl == nil || *ttl != 86400 {
			t.Errorf("%s: ttlSecondsAfterFinished %v, want a day", want.name, ttl)
		}
		checkPod(t, want.name, j.Spec.Template.Spec, want.args)
	}
	// The pods' shards: index 0..N-1 gives 1/N..N/N, as the shell computes it.
	for idx := range 4 {
		out, err := exec.Command("sh", "-c", `JOB_COMPLETION_INDEX=`+strconv.Itoa(idx)+`; echo "$((JOB_COMPLETION_INDEX+1))/4"`).Output()
		if err != nil {
			t.Skipf("no sh: %v", err)
		}
		if got := strings.TrimSpace(string(out)); got != strconv.Itoa(idx+1)+"/4" {
			t.Errorf("index %d gives shard %s", idx, got)
		}
	}
}

// The init recipe: one pod running `evosteer init` with the configuration and the task files
// from the inputs ConfigMap (read-only at /inputs), on the run claim, with the Secret.
func TestKubernetesInitJob(t *testing.T) {
	jobs := renderJobs(t, "init-job.yaml")
	if len(jobs) != 1 {
		t.Fatalf("init-job.yaml holds %d documents, want the init Job", len(jobs))
	}
	j := jobs[0]
	if j.Kind != "Job" || j.Metadata.Name != "evosteer-init" || j.Metadata.Labels["evosteer/part"] != "init" || j.Spec.Completions != 1 ||
		j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 1 || j.Spec.TTLSecondsAfterFinished == nil || *j.Spec.TTLSecondsAfterFinished != 86400 {
		t.Errorf("init Job: %+v", j)
	}
	spec := j.Spec.Template.Spec
	checkPod(t, "evosteer-init", spec, `exec evosteer init --run "/runs/demo" --config "/inputs/my.yaml" --tasks "/inputs/a.jsonl,/inputs/b.jsonl"`)
	inputs := false
	for _, m := range spec.Containers[0].VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == "evosteer-inputs" && m.MountPath == "/inputs" && m.ReadOnly {
				inputs = true
			}
		}
	}
	if !inputs {
		t.Errorf("init Job: the inputs ConfigMap is not mounted read-only at /inputs: %+v", spec.Volumes)
	}
}

// stub writes an executable shell script into dir.
func stub(t *testing.T, dir, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/usr/bin/env bash\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// The Kubernetes driver against a stand-in kubectl (and the real envsubst): the Secret is
// checked first; step 1's rollout Job fails (a shard out of tries) and the driver goes on to
// the step Job, which runs it; the manifests it applies carry the Secret; a failed step Job
// stops it with a non-zero status.
func TestKubernetesTrainDriver(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("envsubst"); err != nil {
		t.Skip("no envsubst (gettext)")
	}
	dir := t.TempDir()
	// kubectl: logs its arguments; apply saves the manifest and records the Job; get job prints
	// the conditions named in state/NAME once the Job was applied.
	stub(t, dir, "kubectl", `log=$(dirname "$0")
echo "$*" >>"$log/kubectl.log"
case "$1 $2" in
"get secret") exit 0 ;;
"apply -f")
  # -l evosteer/part=P selects the Job of that part, as kubectl apply -l does.
  m=$(cat); echo "$m" >>"$log/applied.yaml"
  case $5 in evosteer/part=rollout) re='evosteer-rollout-step-[0-9]*' ;; *) re='evosteer-step-[0-9]*' ;; esac
  for n in $(echo "$m" | grep -o "^  name: $re" | cut -d: -f2); do touch "$log/applied.$n"; done ;;
"get job") [[ -f "$log/applied.$3" ]] || exit 1; cat "$log/state.$3" 2>/dev/null || echo "Complete " ;;
esac
`)
	if err := os.WriteFile(filepath.Join(dir, "state.evosteer-rollout-step-1"), []byte("FailureTarget Failed "), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bash, append([]string{filepath.Join("deploy", "kubernetes", "train.sh")}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "EVOSTEER_SHARDS=4", "EVOSTEER_RUN=/runs/demo",
			"EVOSTEER_IMAGE=registry.example/evosteer:v1", "EVOSTEER_PVC=evosteer-runs", "EVOSTEER_POLL=0")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("1", "2")
	if err != nil {
		t.Fatalf("train.sh 1 2: %v\n%s", err, out)
	}
	if !strings.Contains(out, "job/evosteer-rollout-step-1 failed") || !strings.Contains(out, "step 2: job/evosteer-step-2 complete") {
		t.Errorf("train.sh 1 2 did not go on past the failed rollout to step 2:\n%s", out)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "kubectl.log"))
	if lines := strings.Split(string(log), "\n"); !strings.HasPrefix(lines[0], "get secret evosteer-keys") || strings.Count(string(log), "apply -f -") != 4 {
		t.Errorf("kubectl calls:\n%s", log)
	}
	applied, _ := os.ReadFile(filepath.Join(dir, "applied.yaml"))
	if regexp.MustCompile(`\$\{EVOSTEER_[A-Z_]+\}`).Match(applied) || strings.Count(string(applied), "name: evosteer-keys") < 8 {
		t.Errorf("the manifests applied are not filled in, or lack the Secret:\n%s", applied)
	}
	// A failed step Job stops the driver.
	if err := os.WriteFile(filepath.Join(dir, "state.evosteer-step-3"), []byte("Failed "), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run("3", "4"); err == nil || !strings.Contains(out, "job/evosteer-step-3 did not complete") || strings.Contains(out, "step 4") {
		t.Errorf("train.sh 3 4 with a failed step Job: %v\n%s", err, out)
	}
}

// sbatchCall is one call of the stand-in sbatch: its arguments and its environment.
type sbatchCall struct {
	id      int
	opts    []string // the options before the script
	script  string
	args    []string // the script's arguments
	env     []string
	step    string // EVOSTEER_STEP from --export
	depends string
	array   string
}

// slurmQueue is a stand-in Slurm: sbatch logs each call (its arguments and environment, as
// --export=ALL hands it to the job) and prints a job id; run runs a submitted job as Slurm
// would, with that environment.
type slurmQueue struct {
	t    *testing.T
	dir  string
	bash string
}

func newSlurmQueue(t *testing.T) *slurmQueue {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	q := &slurmQueue{t: t, dir: t.TempDir(), bash: bash}
	stub(t, q.dir, "sbatch", `d=$(dirname "$0")
n=$(( $(cat "$d/count" 2>/dev/null || echo 0) + 1 ))
echo $n >"$d/count"
printf '%s\n' "$@" >"$d/call.$n.args"
env -0 >"$d/call.$n.env"
echo "$((100 + n));cluster1"
`)
	// evosteer: logs its arguments; fails a command named in EVOSTEER_FAIL.
	stub(t, q.dir, "evosteer", `echo "$*" >>"$(dirname "$0")/evosteer.log"
[[ -z "${EVOSTEER_FAIL:-}" || "$1 $*" != *"$EVOSTEER_FAIL"* ]]
`)
	return q
}

// calls returns every sbatch call so far.
func (q *slurmQueue) calls() []sbatchCall {
	var out []sbatchCall
	for n := 1; ; n++ {
		args, err := os.ReadFile(filepath.Join(q.dir, "call."+strconv.Itoa(n)+".args"))
		if err != nil {
			return out
		}
		env, err := os.ReadFile(filepath.Join(q.dir, "call."+strconv.Itoa(n)+".env"))
		if err != nil {
			q.t.Fatal(err)
		}
		c := sbatchCall{id: 100 + n, env: strings.Split(strings.TrimSuffix(string(env), "\x00"), "\x00")}
		all := strings.Split(strings.TrimSuffix(string(args), "\n"), "\n")
		i := slices.IndexFunc(all, func(a string) bool { return !strings.HasPrefix(a, "-") })
		c.opts, c.script, c.args = all[:i], all[i], all[i+1:]
		for _, o := range c.opts {
			switch {
			case strings.HasPrefix(o, "--export="):
				for _, kv := range strings.Split(strings.TrimPrefix(o, "--export="), ",") {
					if v, ok := strings.CutPrefix(kv, "EVOSTEER_STEP="); ok {
						c.step = v
					}
				}
			case strings.HasPrefix(o, "--dependency="):
				c.depends = strings.TrimPrefix(o, "--dependency=")
			case strings.HasPrefix(o, "--array="):
				c.array = strings.TrimPrefix(o, "--array=")
			}
		}
		out = append(out, c)
	}
}

// run runs call c as its job: the script with its arguments, in the environment sbatch saw plus
// --export's EVOSTEER_STEP and the array task's SLURM_ARRAY_TASK_ID; extra adds variables.
func (q *slurmQueue) run(c sbatchCall, task int, extra ...string) (string, error) {
	cmd := exec.Command(q.bash, append([]string{c.script}, c.args...)...)
	cmd.Env = append(slices.Clone(c.env), "EVOSTEER_STEP="+c.step)
	if task > 0 {
		cmd.Env = append(cmd.Env, "SLURM_ARRAY_TASK_ID="+strconv.Itoa(task))
	}
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (q *slurmQueue) evosteerLog() string {
	b, _ := os.ReadFile(filepath.Join(q.dir, "evosteer.log"))
	return string(b)
}

// The Slurm recipe against a stand-in sbatch. A new run: train.sh submits only the init job,
// with the configuration and task files (absolute) passed through to `evosteer init`; init,
// once done, submits step 1's array and its step job, which waits for the array with afterany;
// each step job runs `evosteer step` and submits the next step; the last runs the final check
// (`evosteer train --steps LAST`) and submits nothing. One step is in the queue at a time.
func TestSlurmTrainChain(t *testing.T) {
	q := newSlurmQueue(t)
	runDir := filepath.Join(q.dir, "runs", "demo")
	cmd := exec.Command(q.bash, filepath.Join("deploy", "slurm", "train.sh"), runDir, "4", "1", "3", "configs/paper-run.yaml", "configs/demo-tasks.jsonl", "/shared/more.jsonl")
	cmd.Env = append(os.Environ(), "PATH="+q.dir+":"+os.Getenv("PATH"), "EVOSTEER_BIN="+filepath.Join(q.dir, "evosteer"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("train.sh: %v\n%s", err, out)
	}
	wd, _ := os.Getwd()
	calls := q.calls()
	if len(calls) != 1 || filepath.Base(calls[0].script) != "init.sbatch" || calls[0].depends != "" || calls[0].step != "1" ||
		!slices.Equal(calls[0].args, []string{"--config", filepath.Join(wd, "configs/paper-run.yaml"), "--tasks", filepath.Join(wd, "configs/demo-tasks.jsonl"), "--tasks", "/shared/more.jsonl"}) {
		t.Fatalf("train.sh on a new run submitted %+v, want the init job alone with --config and --tasks", calls)
	}
	out, err := q.run(calls[0], 0)
	if err != nil {
		t.Fatalf("init job: %v\n%s", err, out)
	}
	if want := "init --run " + runDir + " --config " + filepath.Join(wd, "configs/paper-run.yaml") + " --tasks " + filepath.Join(wd, "configs/demo-tasks.jsonl") + " --tasks /shared/more.jsonl\n"; q.evosteerLog() != want {
		t.Errorf("init job ran %q, want %q", q.evosteerLog(), want)
	}
	for k := 1; k <= 3; k++ {
		calls = q.calls()
		if len(calls) != 1+2*k {
			t.Fatalf("after step %d's submitter: %d sbatch calls, want %d (one step at a time)", k-1, len(calls), 1+2*k)
		}
		array, rest := calls[len(calls)-2], calls[len(calls)-1]
		if filepath.Base(array.script) != "step.sbatch" || array.array != "1-4" || array.depends != "" || array.step != strconv.Itoa(k) {
			t.Errorf("step %d: array job %+v", k, array)
		}
		if filepath.Base(rest.script) != "rest.sbatch" || rest.depends != "afterany:"+strconv.Itoa(array.id) || rest.step != strconv.Itoa(k) || rest.array != "" {
			t.Errorf("step %d: step job %+v, want --dependency=afterany:%d", k, rest, array.id)
		}
		if out, err := q.run(array, 3); err != nil || !strings.HasSuffix(q.evosteerLog(), "rollout --run "+runDir+" --step "+strconv.Itoa(k)+" --shard 3/4\n") {
			t.Errorf("step %d: array task 3: %v %s\n%s", k, err, out, q.evosteerLog())
		}
		if out, err := q.run(rest, 0); err != nil {
			t.Fatalf("step %d: step job: %v\n%s", k, err, out)
		}
	}
	if calls := q.calls(); len(calls) != 7 {
		t.Errorf("the last step job submitted more: %d calls", len(calls))
	}
	log := strings.Split(strings.TrimSuffix(q.evosteerLog(), "\n"), "\n")
	if last := log[len(log)-2:]; last[0] != "step --run "+runDir+" --step 3" || last[1] != "train --run "+runDir+" --steps 3" {
		t.Errorf("the last step job ran %q, want the step and the final check", last)
	}
}

// An existing run: train.sh submits step FIRST at once, with the sbatch options of SBATCH_ARGS
// and the array throttle of EVOSTEER_ARRAY_LIMIT; a CONFIG for it is refused; a step job whose
// `evosteer step` fails (a shard that fails again) stops the chain: nothing more is submitted.
func TestSlurmExistingRunThrottleAndStop(t *testing.T) {
	q := newSlurmQueue(t)
	runDir := filepath.Join(q.dir, "run")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "run.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+q.dir+":"+os.Getenv("PATH"), "EVOSTEER_BIN="+filepath.Join(q.dir, "evosteer"),
		"SBATCH_ARGS=--partition=gpu --account=me", "EVOSTEER_ARRAY_LIMIT=2")
	cmd := exec.Command(q.bash, filepath.Join("deploy", "slurm", "train.sh"), runDir, "8", "5", "240", "my.yaml")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "existing run") || len(q.calls()) != 0 {
		t.Errorf("train.sh with a CONFIG for an existing run: %v\n%s", err, out)
	}
	cmd = exec.Command(q.bash, filepath.Join("deploy", "slurm", "train.sh"), runDir, "8", "5", "240")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("train.sh: %v\n%s", err, out)
	}
	calls := q.calls()
	if len(calls) != 2 {
		t.Fatalf("train.sh on an existing run: %d sbatch calls, want step 5's two", len(calls))
	}
	for _, c := range calls {
		if !slices.Contains(c.opts, "--partition=gpu") || !slices.Contains(c.opts, "--account=me") || c.step != "5" {
			t.Errorf("%s: options %q", c.script, c.opts)
		}
	}
	if calls[0].array != "1-8%2" || calls[1].depends != "afterany:"+strconv.Itoa(calls[0].id) {
		t.Errorf("array %q, dependency %q; want 1-8%%2 and afterany:%d", calls[0].array, calls[1].depends, calls[0].id)
	}
	if out, err := q.run(calls[1], 0, "EVOSTEER_FAIL=step"); err == nil || len(q.calls()) != 2 {
		t.Errorf("a failed step: %v, %d calls\n%s", err, len(q.calls()), out)
	}
}

// The scripts parse (bash -n).
func TestClusterScriptsParse(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, f := range []string{"slurm/step.sbatch", "slurm/rest.sbatch", "slurm/init.sbatch", "slurm/submit.sh", "slurm/train.sh",
		"kubernetes/train.sh", "kubernetes/init.sh", "kubernetes/lib.sh"} {
		if out, err := exec.Command(bash, "-n", filepath.Join("deploy", f)).CombinedOutput(); err != nil {
			t.Errorf("bash -n deploy/%s: %v\n%s", f, err, out)
		}
	}
}

// The image recipe, read (no container runtime runs in the tests): the builder compiles with cgo
// and the duckdb_arrow tag; the runtime has python3 and numpy for the sandbox and runs as a
// non-root user.
func TestDockerfile(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(text)
	for _, want := range []string{"CGO_ENABLED=1", "-tags duckdb_arrow", "./cmd/evosteer", " python3 ", "python3-numpy", "AS build", "COPY --from=build"} {
		if !strings.Contains(s, want) {
			t.Errorf("deploy/Dockerfile does not name %q", want)
		}
	}
	if strings.Count(s, "\nFROM ") != 2 {
		t.Errorf("deploy/Dockerfile: want a builder stage and a runtime stage")
	}
	if uid := dockerUID(t); uid == 0 {
		t.Errorf("deploy/Dockerfile runs as root")
	}
	if i, j := strings.LastIndex(s, "\nFROM "), strings.LastIndex(s, "\nUSER "); j < i {
		t.Errorf("deploy/Dockerfile: the runtime stage sets no USER")
	}
}
