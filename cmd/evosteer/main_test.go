//go:build duckdb_arrow

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// run executes the CLI in-process and returns what it printed.
func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, c := range newRoot().Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		out, err := run(t, "", c.Name(), "--help")
		if err != nil || !strings.Contains(out, strings.SplitN(c.Long, "\n", 2)[0]) || !strings.Contains(out, "Usage:") {
			t.Errorf("%s --help: %v\n%s", c.Name(), err, out)
		}
	}
}

func TestConfigPrintsResolvedAndHash(t *testing.T) {
	out, err := run(t, "", "config")
	if err != nil {
		t.Fatal(err)
	}
	def, _ := config.Default()
	if !strings.Contains(out, "beta: 2") || !strings.HasSuffix(out, "# sha256: "+def.SHA256()+"\n") {
		t.Fatalf("config output:\n%s", out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, bad, "anchortb:\n  beta: -2\n")
	if _, err := run(t, "", "config", "--config", bad); err == nil || !strings.Contains(err.Error(), bad+":2:9: anchortb.beta") {
		t.Fatalf("bad config: %v", err)
	}
}

// scoresBatch builds n rows of the scores table.
func scoresBatch(n int, offset int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema.Scores.Schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.StringBuilder).Append("ep" + string(rune('a'+(i+offset)%26)))
		b.Field(1).(*array.Int32Builder).Append(int32(i))
		b.Field(2).(*array.Float64Builder).Append(-0.5)
		b.Field(3).(*array.Float64Builder).Append(-0.25)
		b.Field(4).(*array.Float64Builder).Append(-0.25)
		b.Field(5).(*array.Int32Builder).Append(3)
		b.Field(6).(*array.Int64Builder).Append(int64(offset))
	}
	return b.NewRecordBatch()
}

func TestInitInspectAndSQL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if out, err := run(t, "", "init", "--run", dir); err != nil || !strings.Contains(out, "initialised run demo") {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if _, err := run(t, "", "init", "--run", dir); err == nil {
		t.Fatal("second init over the same folder succeeded")
	}
	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	lin := schema.Lineage{Run: "demo", Step: 1, Stage: "rescore", ConfigSHA256: r.Config.SHA256(), Inputs: map[string]string{"step-000001/rollout/decisions.arrow": strings.Repeat("ab", 32)}}
	write := func(step int, name string, n int) {
		lin.Step = step
		if err := schema.Scores.WriteBatches(filepath.Join(r.StageDir(step, "rescore"), name), lin, scoresBatch(n, step)); err != nil {
			t.Fatal(err)
		}
	}
	write(1, "scores.arrow", 7)
	write(2, "scores-1-of-2.arrow", 5)
	write(2, "scores-2-of-2.arrow", 4)

	out, err := run(t, "", "inspect", filepath.Join(r.StageDir(1, "rescore"), "scores.arrow"), "--rows", "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"table:   scores (version 1)", "rows:    7", "stage:   rescore", "step-000001/rollout/decisions.arrow", "logp_theta: float64", "(2 rows)"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}

	out, err = run(t, "", "sql", "--run", dir, "SELECT count(*) AS n FROM scores")
	if err != nil || !strings.Contains(out, "16") {
		t.Fatalf("count: %v\n%s", err, out)
	}
	out, err = run(t, "SELECT step, count(*) AS n FROM scores GROUP BY step ORDER BY step", "sql", "--run", dir, "--format", "csv")
	if err != nil || out != "step,n\n1,7\n2,9\n" {
		t.Fatalf("per-step counts from stdin: %v\n%q", err, out)
	}
	// Strings must survive DuckDB freeing the batch after the last row was read.
	out, err = run(t, "", "sql", "--run", dir, "SELECT DISTINCT stage, 'run/' || stage AS label FROM scores")
	if err != nil || !strings.Contains(out, "run/rescore") {
		t.Fatalf("string output: %v\n%s", err, out)
	}
	out, err = run(t, "", "sql", "--run", dir, "--list")
	if err != nil || !strings.Contains(out, "scores") || !strings.Contains(out, "3 file(s)") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if _, err := run(t, "", "sql", "--run", dir, "SELECT nope FROM scores"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("bad query must carry DuckDB's message: %v", err)
	}
	if _, err := run(t, "", "sql", "--run", dir, "SELECT * FROM episodes"); err == nil || !strings.Contains(err.Error(), "episodes") {
		t.Fatalf("absent table: %v", err)
	}

	// Two runs in one query: a second run with one scores file, told apart by run_name.
	other := filepath.Join(t.TempDir(), "other")
	if _, err := run(t, "", "init", "--run", other); err != nil {
		t.Fatal(err)
	}
	lin.Run = "other"
	if err := schema.Scores.WriteBatches(filepath.Join(r.StageDir(3, "rescore"), "scores.arrow"), lin, scoresBatch(2, 3)); err != nil {
		t.Fatal(err)
	}
	ro, err := rundir.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Scores.WriteBatches(filepath.Join(ro.StageDir(1, "rescore"), "scores.arrow"), lin, scoresBatch(3, 1)); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "", "sql", "--run", dir, "--run", other, "--format", "csv",
		"SELECT run_name, step, count(*) AS n FROM scores GROUP BY ALL ORDER BY ALL")
	if err != nil || out != "run_name,step,n\ndemo,1,7\ndemo,2,9\ndemo,3,2\nother,1,3\n" {
		t.Fatalf("two runs: %v\n%q", err, out)
	}
	// Two folders named demo: the base names collide, so the labels are the paths.
	twin := filepath.Join(t.TempDir(), "demo")
	if _, err := run(t, "", "init", "--run", twin); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "", "sql", "--run", dir, "--run", twin, "--format", "csv", "SELECT DISTINCT run_name FROM scores ORDER BY 1")
	if err != nil || !strings.Contains(out, filepath.ToSlash(dir)+"\n") {
		t.Fatalf("colliding labels: %v\n%q", err, out)
	}
	if _, err := run(t, "", "sql", "--run", dir, "--run", dir+"/", "SELECT 1"); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("same run twice: %v", err)
	}
	if _, err := run(t, "", "sql", "--run", dir, "--run", filepath.Join(dir, "nope"), "SELECT 1"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("missing second run: %v", err)
	}
}

// train --steps past the bound is refused before a run folder is made.
func TestTrainStepsBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	_, err := run(t, "", "train", "--run", dir, "--steps", "100000000000")
	if err == nil || !strings.Contains(err.Error(), "--steps must be <= 100000") {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("refused train made %s: %v", dir, err)
	}
}

// initDemo is a new run folder "demo" of the default configuration, made by init, and its folder.
func initDemo(t *testing.T) (string, *rundir.Folder) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	if _, err := run(t, "", "init", "--run", dir); err != nil {
		t.Fatal(err)
	}
	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, r
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRolloutCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, "batch:\n  tasks: 6\ntasks:\n  train_per_family: 4\n  test_per_family: 2\n")
	if _, err := run(t, "", "init", "--run", dir, "--config", cfg); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "rollout", "--run", dir, "--step", "1")
	if err != nil {
		t.Fatalf("rollout: %v\n%s", err, out)
	}
	for _, want := range []string{"rollout step 1: done", "Reward by family and source", "natural_reference", "Decisions by action kind", "STOP", "evosteer sql --run"} {
		if !strings.Contains(out, want) {
			t.Errorf("rollout output lacks %q:\n%s", want, out)
		}
	}
	if out, err = run(t, "", "rollout", "--run", dir, "--step", "1"); err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("second rollout: %v\n%s", err, out)
	}
	out, err = run(t, "", "sql", "--run", dir, "--format", "csv", "SELECT count(*) AS n FROM episodes")
	if err != nil || out != "n\n24\n" {
		t.Fatalf("episodes after rollout: %v %q", err, out)
	}
	if _, err := run(t, "", "rollout", "--run", dir, "--step", "0"); err == nil {
		t.Fatal("step 0 accepted")
	}
	if _, err := run(t, "", "rollout", "--run", dir, "--step", "1", "--shard", "3/2"); err == nil {
		t.Fatal("shard 3/2 accepted")
	}
}
