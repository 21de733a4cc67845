//go:build duckdb_arrow

package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// llmOverlay is an overlay with the openai executor at base (…/v1) and the one family
// hotpotqa, whose tasks ship passages (so neither search nor a harness is missing).
func llmOverlay(t *testing.T, base string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "llm.yaml")
	writeFile(t, path, "families: [hotpotqa]\nood_families: {}\nexecutor:\n  backend: openai\n  openai:\n    base_url: "+base+
		"\n    model: qwen-exec\n    api_key_env: \"\"\n")
	return path
}

// deadURL is a loopback URL where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/v1"
	l.Close()
	return url
}

// The simulated default has nothing remote to check: one line saying so, exit 0.
func TestDoctorSimulatedSaysNothingRemote(t *testing.T) {
	out, err := run(t, "", "doctor")
	if err != nil || !strings.HasPrefix(out, "nothing remote to check") || strings.Count(out, "\n") != 1 {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
}

// A server that is down: one FAIL line with the URL and the fix, a non-zero exit, and the
// command ends far within its deadline.
func TestDoctorDeadServerFails(t *testing.T) {
	url := deadURL(t)
	began := time.Now()
	out, err := run(t, "", "doctor", "--config", llmOverlay(t, url))
	wall := time.Since(began)
	t.Logf("doctor against a dead server: %v\n%s", wall, out)
	if err == nil || !strings.Contains(err.Error(), "1 check(s) failed") {
		t.Fatalf("doctor: %v, want a failure\n%s", err, out)
	}
	if !strings.Contains(out, "FAIL executor.openai: "+url+" does not answer") || !strings.Contains(out, "set executor.openai.base_url") {
		t.Errorf("no FAIL line naming %s and the fix:\n%s", url, out)
	}
	if !strings.Contains(out, "ok   families: hotpotqa has a grader") {
		t.Errorf("no ok line per passed check:\n%s", out)
	}
	if wall > 30*time.Second {
		t.Errorf("doctor took %v", wall)
	}
}

// Everything right: ok lines only, exit 0.
func TestDoctorAllRightExitsZero(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"object": "list", "data": [{"id": "qwen-exec"}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"choices": [{"message": {"content": "OK"}, "finish_reason": "length"}], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	out, err := run(t, "", "doctor", "--config", llmOverlay(t, srv.URL+"/v1"))
	if err != nil || strings.Contains(out, "FAIL") || !strings.Contains(out, `ok   executor.openai: `+srv.URL+`/v1 serves "qwen-exec"`) {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
}

// init and train run the doctor first with a remote backend: a dead server stops them with the
// doctor's line before anything is created or played; --skip-doctor bypasses it; doctor --run
// checks the run's own run.yaml.
func TestInitAndTrainStopOnTheDoctor(t *testing.T) {
	url := deadURL(t)
	cfg := llmOverlay(t, url)
	runDir := filepath.Join(t.TempDir(), "run")
	taskFile := hotpotqaTasks(t)
	out, err := run(t, "", "init", "--run", runDir, "--config", cfg, "--tasks", taskFile)
	if err == nil || !strings.Contains(err.Error(), "--skip-doctor") || !strings.Contains(out, "FAIL executor.openai: "+url) {
		t.Fatalf("init against a dead server: %v\n%s", err, out)
	}
	if _, serr := os.Stat(runDir); !os.IsNotExist(serr) {
		t.Fatalf("init created %s before failing its doctor (%v)", runDir, serr)
	}
	if out, err := run(t, "", "init", "--run", runDir, "--config", cfg, "--tasks", taskFile, "--skip-doctor"); err != nil || strings.Contains(out, "FAIL") {
		t.Fatalf("init --skip-doctor: %v\n%s", err, out)
	}
	out, err = run(t, "", "train", "--run", runDir, "--steps", "1")
	if err == nil || !strings.Contains(err.Error(), "train: the serving stack failed") || !strings.Contains(out, "FAIL executor.openai: "+url) {
		t.Fatalf("train against a dead server: %v\n%s", err, out)
	}
	if _, serr := os.Stat(filepath.Join(runDir, "step-000001")); !os.IsNotExist(serr) {
		t.Fatalf("train started step 1 before failing its doctor (%v)", serr)
	}
	out, err = run(t, "", "doctor", "--run", runDir)
	if err == nil || !strings.Contains(out, "FAIL executor.openai: "+url) {
		t.Fatalf("doctor --run: %v\n%s", err, out)
	}
}

// hotpotqaTasks is a task file of the fixture's hotpotqa tasks, the families llmOverlay's
// configuration serves.
func hotpotqaTasks(t *testing.T) string {
	t.Helper()
	fixture, err := os.ReadFile(fixtureTasks)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(string(fixture), "\n") {
		if strings.Contains(l, `"kind": "hotpotqa"`) {
			rows = append(rows, l)
		}
	}
	taskFile := filepath.Join(t.TempDir(), "hotpotqa.jsonl")
	writeFile(t, taskFile, strings.Join(rows, "\n")+"\n")
	return taskFile
}

// step runs the doctor first as train does: against a dead server it stops with the doctor's
// line, naming --skip-doctor, before step 1 starts (past the doctor the rollout would retry the
// dead server for its outage tolerance, so the bypass itself is init's test).
func TestStepStopsOnTheDoctor(t *testing.T) {
	url := deadURL(t)
	cfg := llmOverlay(t, url)
	runDir := filepath.Join(t.TempDir(), "run")
	if out, err := run(t, "", "init", "--run", runDir, "--config", cfg, "--tasks", hotpotqaTasks(t), "--skip-doctor"); err != nil {
		t.Fatalf("init --skip-doctor: %v\n%s", err, out)
	}
	out, err := run(t, "", "step", "--run", runDir, "--step", "1")
	if err == nil || !strings.Contains(err.Error(), "step: the serving stack failed") || !strings.Contains(err.Error(), "--skip-doctor") ||
		!strings.Contains(out, "FAIL executor.openai: "+url) {
		t.Fatalf("step against a dead server: %v\n%s", err, out)
	}
	if _, serr := os.Stat(filepath.Join(runDir, "step-000001")); !os.IsNotExist(serr) {
		t.Fatalf("step started step 1 before failing its doctor (%v)", serr)
	}
	if out, err := run(t, "", "step", "--help"); err != nil || !strings.Contains(out, "--skip-doctor") {
		t.Fatalf("step --help does not list --skip-doctor: %v\n%s", err, out)
	}
}

// The simulated default path of init runs no check and prints nothing of the doctor.
func TestInitSimulatedRunsNoDoctor(t *testing.T) {
	out, err := run(t, "", "init", "--run", filepath.Join(t.TempDir(), "run"))
	if err != nil || strings.Contains(out, "ok ") || strings.Contains(out, "FAIL") || strings.Contains(out, "nothing remote") {
		t.Fatalf("init: %v\n%s", err, out)
	}
}
