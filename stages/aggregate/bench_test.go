//go:build duckdb_arrow

package aggregate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// benchWorld writes one step of synthetic rollout files with about nDecisions decision rows
// (episodes of 1..19 decisions: current, natural_reference and, for 5% of the draws, a pair of
// paired arms), in shards of about 1M decisions, through schema.
func benchWorld(b testing.TB, r *rundir.Folder, step, nDecisions int, taskIDs []string, shapes []structure) {
	rng := rand.New(rand.NewPCG(uint64(step), 99))
	lin := schema.Lineage{Run: r.Name, Step: step, Stage: layout.Rollout, ConfigSHA256: r.Config.SHA256()}
	const perShard = 1_000_000
	nShards := (nDecisions + perShard - 1) / perShard
	written := 0
	for s := 1; s <= nShards; s++ {
		var eps []schema.EpisodeRow
		var decs []schema.DecisionRow
		target := min(nDecisions, s*perShard)
		emit := func(id, taskID, source, pair, cmpID, skill string) {
			fam, _, _ := strings.Cut(taskID, "/")
			n := min(1+rng.IntN(19), target-written)
			var last structure
			for t := 0; t < n; t++ {
				last = shapes[int(float64(len(shapes))*rng.Float64()*rng.Float64())] // skewed towards small indices
				var f [30]float32
				for k := range f {
					f[k] = rng.Float32()
				}
				decs = append(decs, schema.DecisionRow{EpisodeID: id, T: int32(t), ActionJSON: `{"kind":"STOP"}`, ActionKind: "STOP",
					LegalActions: []string{`{"kind":"STOP"}`}, PriorLogits: []float32{0}, Features: f, PolicyInput: []float32{}, ActionInputs: []float32{},
					StructureKey: exactKey(last.hash, last.nodes, last.edges, false), CoarseKey: coarseKey(last.nodes, last.edges, false),
					NNodes: int32(last.nodes), NEdges: int32(last.edges), Forced: t == 0 && pair != ""})
			}
			written += n
			eps = append(eps, schema.EpisodeRow{EpisodeID: id, TaskID: taskID, Family: fam, TaskType: fam, Split: "train", ControllerCount: schema.ControllerCountEstimated, Source: source,
				PairID: nilIfEmpty(pair), ComparisonID: nilIfEmpty(cmpID), CandidateSkillID: nilIfEmpty(skill),
				T: int32(n), Reward: float64(rng.IntN(2)), Stopped: true, Healthy: rng.IntN(50) != 0, MenuID: "menu",
				TerminalStructureKey: exactKey(last.hash, last.nodes, last.edges, true), TerminalCoarseKey: coarseKey(last.nodes, last.edges, true)})
		}
		for i := 0; written < target; i++ {
			taskID := taskIDs[rng.IntN(len(taskIDs))]
			switch x := rng.IntN(40); {
			case x < 19:
				emit(fmt.Sprintf("%d/%s/current/%d-%d", step, taskID, s, i), taskID, "current", "", "", "")
			case x < 38:
				emit(fmt.Sprintf("%d/%s/natural_reference/%d-%d", step, taskID, s, i), taskID, "natural_reference", "", "", "")
			default:
				cmpID := fmt.Sprintf("cmp-%d", i%7)
				pair := fmt.Sprintf("%d/%s/%s/%d-%d", step, taskID, cmpID, s, i)
				emit(fmt.Sprintf("%d/%s/paired_treatment/%d-%d", step, taskID, s, i), taskID, "paired_treatment", pair, cmpID, "evosteer-"+cmpID)
				if written < target {
					emit(fmt.Sprintf("%d/%s/paired_control/%d-%d", step, taskID, s, i), taskID, "paired_control", pair, cmpID, "")
				}
			}
		}
		writeRows(b, filepath.Join(r.StageDir(step, layout.Rollout), layout.ShardFile(layout.Episodes, s, nShards)), schema.Episodes, lin, eps)
		writeRows(b, filepath.Join(r.StageDir(step, layout.Rollout), layout.ShardFile(layout.Decisions, s, nShards)), schema.Decisions, lin, decs)
	}
}

// BenchmarkAggregate10M times the aggregate stage of a step with 10,000,000 decision rows (about
// 1M episodes), after a step of 1M decisions whose buckets (the lag), anchor pool and used pair
// keys it reads. Run it with
//
//	go test -tags duckdb_arrow -run '^$' -bench Aggregate10M -benchtime 1x ./stages/aggregate/
//
// Under -short (make test) it aggregates 2,000 rows of 20 tasks per family and 500 structures.
func BenchmarkAggregate10M(b *testing.B) {
	nDecisions, tasksPerFamily, nShapes := 10_000_000, 2000, 50_000
	if testing.Short() {
		nDecisions, tasksPerFamily, nShapes = 2_000, 20, 500
	}
	if s := os.Getenv("AGGREGATE_BENCH_ROWS"); s != "" { // smaller trial runs
		var err error
		if nDecisions, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	cfg := defaultConfig(b)
	rng := rand.New(rand.NewPCG(1, 2))
	var ts []tasks.Task
	var taskIDs []string
	for _, fam := range cfg.Families {
		for q := 0; q < tasksPerFamily; q++ {
			id := fmt.Sprintf("%s/q%05d", fam, q)
			taskIDs = append(taskIDs, id)
			tk := tasks.Task{ID: id, Family: fam, TaskType: fam, Split: "train", SourceID: id, Origin: "bench", Prompt: "?"}
			if q%3 == 0 {
				rate := rng.Float64()
				tk.PriorRate, tk.PriorCount = &rate, 10
			}
			ts = append(ts, tk)
		}
	}
	w := &world{cfg: cfg, tasks: ts}
	r := newRun(b, w)
	var shapes []structure
	for range nShapes {
		n := rng.IntN(8)
		shapes = append(shapes, structure{hash: fmt.Sprintf("%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()),
			nodes: n, edges: rng.IntN(n*(n-1)/2 + 1)})
	}
	start := time.Now()
	benchWorld(b, r, 1, nDecisions/10, taskIDs, shapes)
	if _, err := r.RunStage(ctx, 1, Stage{}, false); err != nil {
		b.Fatal(err)
	}
	benchWorld(b, r, 2, nDecisions, taskIDs, shapes)
	b.Logf("set-up (writing %d + %d decision rows, aggregating step 1): %s", nDecisions/10, nDecisions, time.Since(start).Round(time.Second))

	b.ResetTimer()
	var elapsed time.Duration
	for range b.N {
		t0 := time.Now()
		if _, err := r.RunStage(ctx, 2, Stage{}, true); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(t0)
	}
	b.StopTimer()
	sec := elapsed.Seconds() / float64(b.N)
	b.ReportMetric(sec, "s/op")
	b.ReportMetric(float64(nDecisions)/sec, "rows/s")
	sum, err := Summarize(ctx, r, 2)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("step 2: %d decisions in %.1f s (%.0f rows/s); anchors %d, buckets %d, corrections exact %d coarse %d none %d, value_data %d, pairs %d",
		nDecisions, sec, float64(nDecisions)/sec, sum.Anchors, sum.Buckets, sum.CorrectionsExact, sum.CorrectionsCoarse, sum.CorrectionsNone, sum.ValueData, sum.Pairs)
}
