package evosteer_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// job is the part of a Kubernetes batch/v1 Job that deploy/kubernetes/step-job.yaml sets,
// decoded strictly: a misspelt or misplaced field is an error.
type job struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Parallelism    int    `yaml:"parallelism"`
		BackoffLimit   int    `yaml:"backoffLimit"`
		Template       struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Name      string   `yaml:"name"`
					Image     string   `yaml:"image"`
					Command   []string `yaml:"command"`
					Args      []string `yaml:"args"`
					Resources struct {
						Requests map[string]string `yaml:"requests"`
					} `yaml:"resources"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name                  string `yaml:"name"`
					PersistentVolumeClaim struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// The Kubernetes recipe, rendered as envsubst renders it (N = 4, K = 7): an Indexed Job of N pods
// at once whose pod i runs `evosteer rollout ... --shard i/N` (JOB_COMPLETION_INDEX from 0), then
// a Job running `evosteer step`, both on the claim mounted where the run folder is, each selected
// by its evosteer/part label (train.sh applies them one at a time).
func TestKubernetesStepJob(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("deploy", "kubernetes", "step-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"EVOSTEER_STEP": "7", "EVOSTEER_SHARDS": "4", "EVOSTEER_RUN": "/runs/demo",
		"EVOSTEER_IMAGE": "registry.example/evosteer:v1", "EVOSTEER_PVC": "evosteer-runs"}
	rendered := os.Expand(string(text), func(name string) string {
		v, ok := vars[name]
		if !ok {
			t.Errorf("step-job.yaml uses ${%s}, which train.sh does not fill in", name)
		}
		return v
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
			t.Fatalf("step-job.yaml: %v", err)
		}
		jobs = append(jobs, j)
	}
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
		spec := j.Spec.Template.Spec
		switch {
		case j.APIVersion != "batch/v1" || j.Kind != "Job" || j.Metadata.Name != want.name:
			t.Errorf("document %d: %s %s %s, want batch/v1 Job %s", k, j.APIVersion, j.Kind, j.Metadata.Name, want.name)
		case j.Metadata.Labels["evosteer/part"] != want.part || j.Metadata.Labels["evosteer/step"] != "7":
			t.Errorf("%s: labels %v", want.name, j.Metadata.Labels)
		case j.Spec.CompletionMode != want.mode || j.Spec.Completions != n || j.Spec.Parallelism != n || j.Spec.BackoffLimit < 1:
			t.Errorf("%s: completionMode %q, completions %d, parallelism %d, backoffLimit %d", want.name, j.Spec.CompletionMode, j.Spec.Completions, j.Spec.Parallelism, j.Spec.BackoffLimit)
		case spec.RestartPolicy != "Never" || len(spec.Containers) != 1 || len(spec.Volumes) != 1:
			t.Errorf("%s: restartPolicy %q, %d containers, %d volumes", want.name, spec.RestartPolicy, len(spec.Containers), len(spec.Volumes))
		default:
			c := spec.Containers[0]
			if c.Image != vars["EVOSTEER_IMAGE"] || strings.Join(c.Command, " ") != "/bin/sh -c" || len(c.Args) != 1 || c.Args[0] != want.args {
				t.Errorf("%s: image %q, command %q, args %q", want.name, c.Image, c.Command, c.Args)
			}
			if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != spec.Volumes[0].Name || !strings.HasPrefix(vars["EVOSTEER_RUN"], c.VolumeMounts[0].MountPath+"/") ||
				spec.Volumes[0].PersistentVolumeClaim.ClaimName != "evosteer-runs" {
				t.Errorf("%s: the run folder is not on the claim: mounts %+v, volumes %+v", want.name, c.VolumeMounts, spec.Volumes)
			}
		}
	}
	// The pods' shards: index 0..N-1 gives 1/N..N/N, as the shell computes it.
	for idx := range 4 {
		out, err := exec.Command("sh", "-c", `JOB_COMPLETION_INDEX=`+string(rune('0'+idx))+`; echo "$((JOB_COMPLETION_INDEX+1))/4"`).Output()
		if err != nil {
			t.Skipf("no sh: %v", err)
		}
		if got := strings.TrimSpace(string(out)); got != string(rune('1'+idx))+"/4" {
			t.Errorf("index %d gives shard %s", idx, got)
		}
	}
}

// The Slurm and Kubernetes scripts parse (bash -n), and the Slurm array task runs the shard of
// its array index.
func TestClusterScriptsParse(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, f := range []string{"slurm/step.sbatch", "slurm/rest.sbatch", "slurm/train.sh", "kubernetes/train.sh"} {
		if out, err := exec.Command(bash, "-n", filepath.Join("deploy", f)).CombinedOutput(); err != nil {
			t.Errorf("bash -n deploy/%s: %v\n%s", f, err, out)
		}
	}
	// step.sbatch with a stand-in binary that prints its arguments.
	bin := filepath.Join(t.TempDir(), "evosteer")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, filepath.Join("deploy", "slurm", "step.sbatch"))
	cmd.Env = append(os.Environ(), "EVOSTEER_BIN="+bin, "EVOSTEER_RUN=/shared/runs/demo", "EVOSTEER_STEP=3", "EVOSTEER_SHARDS=8", "SLURM_ARRAY_TASK_ID=5")
	out, err := cmd.CombinedOutput()
	if want := "rollout --run /shared/runs/demo --step 3 --shard 5/8\n"; err != nil || !bytes.Equal(out, []byte(want)) {
		t.Errorf("step.sbatch as array task 5: %q %v, want %q", out, err, want)
	}
}
