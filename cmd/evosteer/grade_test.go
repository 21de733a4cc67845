//go:build duckdb_arrow

package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/evosteer/evosteer-go/internal/tasks"
)

const fixtureTasks = "../../internal/tasks/testdata/tasks.jsonl"

func TestGradePrintsPerBenchmarkMetricsAndScores(t *testing.T) {
	dir := t.TempDir()
	preds := filepath.Join(dir, "p.jsonl")
	writeFile(t, preds, `{"task_id": "hotpotqa/f1", "output": "Answer: Paris"}
{"task_id": "hotpotqa/test-f2", "output": "Answer: no"}

{"task_id": "medqa/f4", "output": "Answer: C"}
{"task_id": "math_hard/test-f11", "output": "\\boxed{3/4}"}
`)
	scores := filepath.Join(dir, "s.jsonl")
	out, err := run(t, "", "grade", "--tasks", fixtureTasks, "--predictions", preds, "--scores", scores)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hotpotqa   2  EM        0.5000  0.5000  qa-exact-match@1", "math_hard  1  accuracy  1.0000  -       math-equivalence@1",
		"medqa      1  accuracy  1.0000  -       choice-letter@1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in\n%s", want, out)
		}
	}
	b, err := os.ReadFile(scores)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var first struct {
		TaskID string `json:"task_id"`
		tasks.Score
	}
	if len(lines) != 4 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.Grader != tasks.GraderQA || first.Prediction != "Paris" || first.Reward != 1 {
		t.Fatalf("scores:\n%s", b)
	}
	writeFile(t, preds, `{"task_id": "hotpotqa/f1", "output": "x"}`+"\n"+`{"task_id": "nope", "output": "x"}`+"\n")
	if _, err := run(t, "", "grade", "--tasks", fixtureTasks, "--predictions", preds); err == nil || !strings.Contains(err.Error(), `line 2: field "task_id": "nope" is in none of the task files`) {
		t.Fatalf("unknown task: %v", err)
	}
	writeFile(t, preds, `{"task_id": "alfworld/valid_unseen/000003", "output": "x"}`+"\n")
	if _, err := run(t, "", "grade", "--tasks", fixtureTasks, "--predictions", preds); err == nil || !strings.Contains(err.Error(), "own environment harness") {
		t.Fatalf("environment task: %v", err)
	}
}

// TestGradeRefusesAnOverlongLine: a predictions line over 16 MiB is refused, naming the file
// and the line, without holding the line in memory.
func TestGradeRefusesAnOverlongLine(t *testing.T) {
	preds := filepath.Join(t.TempDir(), "p.jsonl")
	long := `{"task_id": "hotpotqa/f1", "output": "` + strings.Repeat("x", tasks.MaxPredictionLine) + `"}`
	writeFile(t, preds, `{"task_id": "hotpotqa/f1", "output": "Answer: Paris"}`+"\n"+long+"\n")
	_, err := run(t, "", "grade", "--tasks", fixtureTasks, "--predictions", preds)
	if err == nil || !strings.Contains(err.Error(), preds+": line 2: longer than 16 MiB") {
		t.Fatalf("an overlong line: %v", err)
	}
}

func TestInitCopiesTaskFilesBySplit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if _, err := run(t, "", "init", "--run", dir, "--tasks", fixtureTasks); err != nil {
		t.Fatal(err)
	}
	train, err := tasks.ReadFile(filepath.Join(dir, "tasks", "train.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	test, err := tasks.ReadFile(filepath.Join(dir, "tasks", "test.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	if len(train) != 5 || len(test) != 8 || train[0].ID != "aime_2026/f5" {
		t.Fatalf("train %d test %d", len(train), len(test))
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	writeFile(t, bad, `{"answer": "A", "kind": "medqa", "options": ["A"], "prompt": "Q", "split": "validation", "task_id": "medqa/v1", "task_type": "medqa"}`+"\n")
	if _, err := run(t, "", "init", "--run", filepath.Join(t.TempDir(), "r2"), "--tasks", bad); err == nil || !strings.Contains(err.Error(), `split "validation"`) {
		t.Fatalf("%v", err)
	}
	// A pool with nothing trainable is refused at init, not three stages into the first step.
	for name, rows := range map[string]string{
		"empty":                  "",
		"only test rows":         `{"answer": "A", "kind": "medqa", "options": ["A"], "prompt": "Q", "split": "test", "task_id": "medqa/t1", "task_type": "medqa"}` + "\n",
		"only OOD training rows": `{"answer": "A", "kind": "gpqa_diamond", "options": ["A"], "prompt": "Q", "split": "train", "task_id": "gpqa_diamond/t1", "task_type": "medqa"}` + "\n",
	} {
		writeFile(t, bad, rows)
		dir := filepath.Join(t.TempDir(), "r3")
		_, err := run(t, "", "init", "--run", dir, "--tasks", bad)
		if err == nil || !strings.Contains(err.Error(), "nothing to train on") && !strings.Contains(err.Error(), "no task") {
			t.Errorf("%s: %v", name, err)
		}
		if _, serr := os.Stat(dir); serr == nil {
			t.Errorf("%s: the refused run folder exists", name)
		}
	}
}

// TestOpenAIRolloutKeepsTheKeySecret rolls out a step on the openai backend against a local
// Chat Completions server and checks that the API key reaches the server and no file.
func TestOpenAIRolloutKeepsTheKeySecret(t *testing.T) {
	const key = "sk-rollout-secret-5f3a9c"
	t.Setenv("EVOSTEER_TEST_API_KEY", key)
	var authOK, calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") == "Bearer "+key {
			authOK.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices": [{"message": {"content": "The answer is below.\nAnswer: Paris"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 50, "completion_tokens": 9}}`))
	}))
	defer srv.Close()
	py := os.Getenv("EVOSTEER_SANDBOX_PYTHON")
	if py == "" {
		py = "python3"
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "openai.yaml")
	writeFile(t, cfg, "batch:\n  tasks: 2\n  current_rollouts: 1\n  reference_rollouts: 1\nexecutor:\n  backend: openai\n  openai:\n"+
		"    base_url: "+srv.URL+"/v1\n    model: test-model\n    api_key_env: EVOSTEER_TEST_API_KEY\n    outage_seconds: 1\n"+
		"tools:\n  python:\n    interpreter: "+py+"\n")
	runDir := filepath.Join(dir, "run")
	if _, err := run(t, "", "init", "--run", runDir, "--config", cfg, "--tasks", fixtureTasks, "--skip-doctor"); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "rollout", "--run", runDir, "--step", "1")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if calls.Load() == 0 || authOK.Load() != calls.Load() {
		t.Fatalf("%d calls, %d with the key", calls.Load(), authOK.Load())
	}
	q, err := run(t, "", "sql", "--run", runDir, "--format", "csv", "SELECT count(*) AS n, sum(CASE WHEN healthy THEN 1 ELSE 0 END) AS h FROM episodes")
	if err != nil || !strings.Contains(q, "4,4") {
		t.Fatalf("episodes: %v\n%s", err, q)
	}
	filepath.Walk(runDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
				t.Errorf("%s holds the API key", p)
			}
		}
		return nil
	})
}

// TestGradeScoresAFakedPassZero: through `evosteer grade`, an MBPP+ prediction that reads the
// harness's pass marker, prints it and exits scores 0, and an honest one 1 (the grader's own
// tests hold every trick, ./internal/tasks -run CodeGraderTricks).
func TestGradeScoresAFakedPassZero(t *testing.T) {
	py := os.Getenv("EVOSTEER_SANDBOX_PYTHON")
	if py == "" {
		py = "python3"
	}
	if _, err := exec.LookPath(py); err != nil {
		t.Skipf("skipped: no python interpreter %s for the sandbox", py)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "python.yaml")
	writeFile(t, cfg, "tools:\n  python:\n    interpreter: "+py+"\n")
	faked := "```python\nimport os, re\n\nclass Probe:\n    marker = re.findall(r'evosteer-tests-passed-[0-9a-f]+', open('main.py').read())\n" +
		"    if marker:\n        print(marker[-1])\n        os._exit(0)\n\ndef add_two(a, b):\n    return 0\n```"
	honest := "```python\ndef add_two(a, b):\n    return a + b\n```"
	var lines []string
	for _, out := range []string{faked, honest} {
		b, err := json.Marshal(map[string]string{"task_id": "mbpp_plus/f6", "output": out})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	preds, scores := filepath.Join(dir, "p.jsonl"), filepath.Join(dir, "s.jsonl")
	writeFile(t, preds, strings.Join(lines, "\n")+"\n")
	if out, err := run(t, "", "grade", "--config", cfg, "--tasks", fixtureTasks, "--predictions", preds, "--scores", scores); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(scores)
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s tasks.Score
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s.Reward)
	}
	if len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("rewards %v, want the faked pass 0 and the honest answer 1:\n%s", got, b)
	}
}
