//go:build duckdb_arrow

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/schema"
)

// tree hashes every file and names every folder under dir.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// No query of evosteer sql can write a file, in the run or anywhere: DuckDB's file access is off
// and its settings locked once the tables are loaded. Ordinary queries still work, and results
// go out through --format and --out, which refuses a path inside a run.
func TestSQLCannotChangeARun(t *testing.T) {
	dir, r := initDemo(t)
	lin := schema.Lineage{Run: "demo", Step: 1, Stage: "rescore", ConfigSHA256: r.Config.SHA256(), Inputs: map[string]string{}}
	if err := schema.Scores.WriteBatches(filepath.Join(r.StageDir(1, "rescore"), "scores.arrow"), lin, scoresBatch(5, 1)); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	before, beforeElsewhere := tree(t, dir), tree(t, elsewhere)
	q := func(s string) string { return "'" + filepath.ToSlash(s) + "'" }
	scores := filepath.Join(r.StageDir(1, "rescore"), "scores.arrow")
	for _, attack := range []string{
		"COPY (SELECT * FROM scores) TO " + q(scores) + " (FORMAT csv)",
		"COPY (SELECT 1 AS x) TO " + q(filepath.Join(r.StepDir(1), "rollout", "episodes.arrow")),
		"COPY (SELECT 1 AS x) TO " + q(filepath.Join(r.StepDir(0), "manifest.json")),
		"COPY (SELECT 1 AS x) TO " + q(filepath.Join(dir, "run.yaml")),
		"COPY scores TO " + q(filepath.Join(elsewhere, "out.parquet")) + " (FORMAT parquet)",
		"ATTACH " + q(filepath.Join(dir, "extra.db")) + " AS extra",
		"EXPORT DATABASE " + q(filepath.Join(dir, "export")),
		"SELECT * FROM read_text(" + q(filepath.Join(dir, "run.yaml")) + ")",
		"SET enable_external_access = true",
		"SET temp_directory = " + q(dir),
	} {
		_, err := run(t, "", "sql", "--run", dir, attack)
		if err == nil {
			t.Errorf("%s: accepted", attack)
			continue
		}
		msg := err.Error()
		// Refused by DuckDB's sealed file system and settings, or before that as a statement
		// that does not read (ATTACH, SET).
		if !strings.Contains(msg, "disabled by configuration") && !strings.Contains(msg, "configuration has been locked") &&
			!strings.Contains(msg, "statement refused; only reading statements run") || !strings.Contains(msg, "--out FILE") {
			t.Errorf("%s: error %v", attack, err)
		}
	}
	if after := tree(t, dir); len(after) != len(before) {
		t.Errorf("the run's files changed:\nbefore %v\nafter  %v", before, after)
	} else {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s changed", k)
			}
		}
	}
	if after := tree(t, elsewhere); len(after) != len(beforeElsewhere) {
		t.Errorf("a query wrote outside the run: %v", after)
	}

	// Ordinary queries work; --out writes what standard output shows, outside the run only.
	want := "step,n\n1,5\n"
	out, err := run(t, "", "sql", "--run", dir, "--format", "csv", "SELECT step, count(*) AS n FROM scores GROUP BY step")
	if err != nil || out != want {
		t.Fatalf("select: %v %q", err, out)
	}
	file := filepath.Join(elsewhere, "counts.csv")
	if _, err := run(t, "", "sql", "--run", dir, "--format", "csv", "--out", file, "SELECT step, count(*) AS n FROM scores GROUP BY step"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != want {
		t.Fatalf("--out: %v %q", err, b)
	}
	link := filepath.Join(elsewhere, "into-run")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, inside := range []string{filepath.Join(dir, "x.csv"), scores, dir, filepath.Join(link, "x.csv")} {
		if _, err := run(t, "", "sql", "--run", dir, "--out", inside, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "inside the run folder") {
			t.Errorf("--out %s: %v", inside, err)
		}
	}
	// A link named as --out is replaced, not followed into the run.
	trap := filepath.Join(elsewhere, "trap.yaml")
	if err := os.Symlink(filepath.Join(dir, "run.yaml"), trap); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "", "sql", "--run", dir, "--out", trap, "SELECT 1 AS x"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(trap); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("--out followed the link: %v %v", fi, err)
	}
	if after := tree(t, dir); after["run.yaml"] != before["run.yaml"] || len(after) != len(before) {
		t.Fatal("the run changed through --out")
	}
}

// TestSQLRefusesAFolderThatIsNoRun: `sql --run /` (or any folder without run.yaml and without
// Arrow files of its own) is refused at once, naming the folder; nothing below it is walked.
func TestSQLRefusesAFolderThatIsNoRun(t *testing.T) {
	nested := t.TempDir()
	if err := os.MkdirAll(filepath.Join(nested, "deep", "er"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/", nested} {
		_, err := run(t, "", "sql", "--run", dir, "SELECT 1")
		if err == nil || !strings.Contains(err.Error(), "not a run folder (no run.yaml)") || !strings.Contains(err.Error(), dir) {
			t.Errorf("sql --run %s: %v", dir, err)
		}
	}
}

// TestSQLWritesNoFileThroughTheTemporaryDirectory: DuckDB lets statements write into its
// temporary directory (by default .tmp in the working directory) even with external access off.
// evosteer sql gives it none: with .tmp a plain folder, or a link into a run's rollout folder,
// no statement writes a file there or changes the run, and the run still loads afterwards.
func TestSQLWritesNoFileThroughTheTemporaryDirectory(t *testing.T) {
	dir, r := initDemo(t)
	rollout := r.StageDir(1, "rollout")
	lin := schema.Lineage{Run: "demo", Step: 1, Stage: "rollout", ConfigSHA256: r.Config.SHA256(), Inputs: map[string]string{}}
	if err := schema.Episodes.WriteBatches(filepath.Join(rollout, "episodes.arrow"), lin); err != nil {
		t.Fatal(err)
	}
	q := func(s string) string { return "'" + filepath.ToSlash(s) + "'" }
	for _, linked := range []bool{false, true} {
		cwd := t.TempDir()
		t.Chdir(cwd)
		tmp := filepath.Join(cwd, ".tmp")
		if linked {
			if err := os.Symlink(rollout, tmp); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Mkdir(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		// tree does not follow the link; the run's tree covers what it points to.
		watched := map[string]string{"the run": dir, "the working directory": cwd}
		if linked {
			delete(watched, "the working directory")
		}
		before := map[string]map[string]string{}
		for name, root := range watched {
			before[name] = tree(t, root)
		}
		for _, attack := range []string{
			"COPY (SELECT 1) TO '.tmp/x.csv'",
			"COPY (SELECT 1 AS x) TO '.tmp/episodes.arrow' (FORMAT csv)",
			"COPY (SELECT 1) TO " + q(filepath.Join(tmp, "x.csv")),
			"COPY (SELECT 1 AS x) TO " + q(filepath.Join(tmp, "episodes.arrow")) + " (FORMAT csv)",
			"EXPLAIN ANALYZE COPY (SELECT 1) TO '.tmp/x.csv'",
			"EXPORT DATABASE '.tmp/export'",
			"SELECT * FROM read_text('.tmp/episodes.arrow')",
		} {
			if _, err := run(t, "", "sql", "--run", dir, attack); err == nil || !strings.Contains(err.Error(), "--out FILE") {
				t.Errorf(".tmp linked %v: %s: %v, want a refusal", linked, attack, err)
			}
		}
		// DuckDB has no temporary directory, and no directory at all that a statement may open.
		want := "t,a,p\n,[],[]\n"
		if out, err := run(t, "", "sql", "--run", dir, "--format", "csv", "SELECT current_setting('temp_directory') AS t, current_setting('allowed_directories') AS a, current_setting('allowed_paths') AS p"); err != nil || out != want {
			t.Errorf(".tmp linked %v: settings %v %q, want %q", linked, err, out, want)
		}
		for name, root := range watched {
			b, after := before[name], tree(t, root)
			if len(after) != len(b) {
				t.Errorf(".tmp linked %v: files of %s changed:\nbefore %v\nafter  %v", linked, name, b, after)
			}
			for k, v := range b {
				if after[k] != v {
					t.Errorf(".tmp linked %v: %s: %s changed", linked, name, k)
				}
			}
		}
		if ents, err := os.ReadDir(tmp); err != nil || len(ents) != map[bool]int{false: 0, true: 1}[linked] {
			t.Errorf(".tmp linked %v: holds %v %v", linked, ents, err)
		}
		if out, err := run(t, "", "sql", "--run", dir, "--format", "csv", "SELECT count(*) AS n FROM episodes"); err != nil || out != "n\n0\n" {
			t.Errorf(".tmp linked %v: the run no longer loads: %v %q", linked, err, out)
		}
	}
}
