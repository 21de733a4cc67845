//go:build duckdb_arrow

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The learning chain through the CLI, two steps (rollout → rescore → aggregate → update, then
// step 2 on the updated learner): aggregate's summary, --check against the oracle, and
// `evosteer sql` over the anchors, buckets, pairs and states it wrote; a later step without its
// rollout and the previous step's aggregate fails with a hint.
func TestAggregateCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, "batch:\n  tasks: 6\ntasks:\n  train_per_family: 4\n  test_per_family: 2\noptimizer:\n  grad_clip: 0.5\n")
	if _, err := run(t, "", "init", "--run", dir, "--config", cfg); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"1", "2"} {
		for _, stage := range []string{"rollout", "rescore"} {
			if out, err := run(t, "", stage, "--run", dir, "--step", s); err != nil {
				t.Fatalf("%s %s: %v\n%s", stage, s, err, out)
			}
		}
		out, err := run(t, "", "aggregate", "--run", dir, "--step", s, "--check")
		if err != nil {
			t.Fatalf("aggregate %s: %v\n%s", s, err, out)
		}
		for _, want := range []string{"aggregate step " + s + ": done", "anchors             24 rows  mean p_hat 0.", "buckets", "corrections",
			"value_data", "pairs                0 rows", "anchors      ok (24 rows)", "buckets      ok", "corrections  ok", "value_data   ok", "pairs        ok (0 rows)",
			"anchor_pool  ok (", " rows, exact)", "pairs_used   ok (0 rows, exact)"} {
			if !strings.Contains(out, want) {
				t.Errorf("aggregate %s output lacks %q:\n%s", s, want, out)
			}
		}
		if s == "1" {
			out, err := run(t, "", "update", "--run", dir, "--step", s)
			if err != nil || !strings.Contains(out, "update step 1: 24 trajectories") || !strings.Contains(out, "gain +0.0000") || !strings.Contains(out, "(clip 0.5)") {
				t.Fatalf("update 1: %v\n%s", err, out)
			}
			// A stage's summary is read from its files: a stage that is up to date prints it too.
			for stage, want := range map[string]string{"update": "update step 1: 24 trajectories", "rescore": "rescore step 1: ", "rollout": "Reward by family and source (step 1)"} {
				out, err := run(t, "", stage, "--run", dir, "--step", s)
				if err != nil || !strings.Contains(out, stage+" step 1: up to date") || !strings.Contains(out, want) {
					t.Fatalf("%s 1 again: %v\n%s", stage, err, out)
				}
			}
			for _, stage := range []string{"validate", "author"} {
				if out, err := run(t, "", stage, "--run", dir, "--step", s); err != nil {
					t.Fatalf("%s %s: %v\n%s", stage, s, err, out)
				}
			}
		}
	}
	out, err := run(t, "", "aggregate", "--run", dir, "--step", "2")
	if err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("second aggregate: %v\n%s", err, out)
	}

	for _, q := range []struct{ query, want string }{
		// One anchor per episode, each step.
		{"SELECT a.step, count(*) AS n, count(e.episode_id) AS matched FROM anchors a LEFT JOIN episodes e USING (step, episode_id) GROUP BY a.step ORDER BY a.step",
			"step,n,matched\n1,24,24\n2,24,24\n"},
		// Anchors lie in [0, beta] (Lemma B.2).
		{"SELECT bool_and(anchor BETWEEN 0 AND 2) AS ok, bool_and(loo = (source = 'natural_reference')) AS loo FROM anchors JOIN episodes USING (step, episode_id)",
			"ok,loo\ntrue,true\n"},
		// Buckets are cumulative: step 2 holds every step-1 key with at least as many visits.
		{"SELECT count(*) AS lost FROM buckets b1 LEFT JOIN buckets b2 ON b2.step = 2 AND b2.kind = b1.kind AND b2.key = b1.key WHERE b1.step = 1 AND (b2.key IS NULL OR b2.visits < b1.visits)",
			"lost\n0\n"},
		{"SELECT DISTINCT kind FROM buckets ORDER BY kind", "kind\ncoarse\nexact\n"},
		// No paired episodes yet: an empty pairs table per step, and no used keys.
		{"SELECT count(*) AS n FROM pairs", "n\n0\n"},
		{"SELECT count(*) AS n FROM pairs_used", "n\n0\n"},
		// The anchor pool of step k counts the healthy natural-reference episodes of steps 1..k.
		{"SELECT p.step, p.n = e.n AS ok FROM (SELECT step, sum(episodes) AS n FROM anchor_pool GROUP BY step) p, " +
			"LATERAL (SELECT count(*) AS n FROM episodes WHERE step <= p.step AND source = 'natural_reference' AND healthy) e ORDER BY p.step",
			"step,ok\n1,true\n2,true\n"},
		{"SELECT step, count(*) FILTER (WHERE kind = 'none') = count(*) AS all_none FROM corrections GROUP BY step ORDER BY step",
			"step,all_none\n1,true\n2,false\n"},
	} {
		out, err := run(t, "", "sql", "--run", dir, "--format", "csv", q.query)
		if err != nil || out != q.want {
			t.Errorf("%s: %v\n%q, want %q", q.query, err, out, q.want)
		}
	}

	if out, err := run(t, "", "aggregate", "--run", dir, "--step", "4"); err == nil || !strings.Contains(err.Error(), "evosteer rollout --step 4") ||
		!strings.Contains(err.Error(), "step-000003/aggregate/anchor_pool.arrow: run `evosteer aggregate --step 3") {
		t.Fatalf("aggregate of a step without its rollout and the previous step's aggregate: %v\n%s", err, out)
	}
}
