package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/paradigms"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/schema"
)

// The committed default world and its fit report.
const (
	worldFile     = "../../configs/world-paper.yaml"
	fitArrow      = "../../docs/calibration/fit.arrow"
	workflowsJSON = "../../docs/calibration/workflows.json"
)

// TestTheDefaultWorldIsTheCommittedFit: pipeline.yaml's sim: and reference_prior: blocks are
// exactly the fitted world of configs/world-paper.yaml.
func TestTheDefaultWorldIsTheCommittedFit(t *testing.T) {
	def := defaultConfig(t)
	world, err := config.Load(worldFile)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(def.Sim, world.Sim) {
		t.Error("pipeline.yaml's sim: block differs from configs/world-paper.yaml (copy the fitted world into pipeline.yaml)")
	}
	if def.Prior != world.Prior {
		t.Error("pipeline.yaml's reference_prior: block differs from configs/world-paper.yaml")
	}
}

// TestTheDefaultWorldNamesItsTargets: the committed world's header records the targets file as
// it is now (the line `make calibrate` writes), so the byte-for-byte check of a refit compares
// like with like after an edit of the targets file.
func TestTheDefaultWorldNamesItsTargets(t *testing.T) {
	tg, err := ReadTargets(paperTargets)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(worldFile)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("# targets: paper-table2-baselines.csv (sha256 %s, %d cells)\n", tg.SHA256, len(tg.Cells))
	if !bytes.Contains(b, []byte(want)) {
		t.Errorf("%s does not hold the line %q: refit (make calibrate) or copy the line the fit writes", worldFile, want)
	}
}

// TestTheDefaultWorldReproducesItsFitReport replays the first run of the fit report's check on
// two benchmarks (a QA benchmark with search and an interactive one), every baseline policy, with
// the report's searched workflows: each score must equal the one the report recorded exactly,
// since the check is a deterministic function of the world, the tasks and the seeds.
func TestTheDefaultWorldReproducesItsFitReport(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: replays 1,536 episodes")
	}
	rows, err := schema.ReadFile[schema.CalibrationFitRow](schema.CalibrationFit, fitArrow)
	if err != nil {
		t.Fatal(err)
	}
	wf := committedWorkflows(t)
	recorded := map[Key]float64{}
	for _, r := range rows {
		if r.Source == "check" && r.Run == 0 {
			recorded[Key{r.Benchmark, r.Policy}] = r.Score
		}
	}
	cfg := defaultConfig(t)
	benchmarks := []string{"musique", "alfworld"}
	o := DefaultOptions()
	s, err := NewSample(cfg, benchmarks, "test", 128, 1, seed.Derive(o.Seed, "calibrate", "check"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Evaluate(context.Background(), cfg, s, benchmarks, Policies, wf)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range benchmarks {
		for _, p := range Policies {
			k := Key{b, p}
			want, ok := recorded[k]
			if !ok {
				t.Fatalf("the fit report has no check run 0 for %v", k)
			}
			if got[k] != want {
				t.Errorf("%s %s: the default world scores %.4f, the fit report recorded %.4f", b, p, got[k], want)
			}
		}
	}
}

// TestTheFitFigureIsTheCommittedReports: docs/calibration/fit.png is Figure of the committed
// fit.arrow, byte for byte (regenerate with EVOSTEER_UPDATE_FIGURE=1 after a refit).
func TestTheFitFigureIsTheCommittedReports(t *testing.T) {
	rows, err := schema.ReadFile[schema.CalibrationFitRow](schema.CalibrationFit, fitArrow)
	if err != nil {
		t.Fatal(err)
	}
	png, err := Figure(rows)
	if err != nil {
		t.Fatal(err)
	}
	const path = "../../docs/calibration/fit.png"
	if os.Getenv("EVOSTEER_UPDATE_FIGURE") == "1" {
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, png) {
		t.Errorf("%s is not Figure of %s (regenerate with EVOSTEER_UPDATE_FIGURE=1)", path, fitArrow)
	}
	again, _ := Figure(rows)
	if !bytes.Equal(again, png) {
		t.Error("Figure is not deterministic")
	}
}

// committedWorkflows are the searched workflows of the committed fit report.
func committedWorkflows(t testing.TB) paradigms.Workflows {
	t.Helper()
	data, err := os.ReadFile(workflowsJSON)
	if err != nil {
		t.Fatal(err)
	}
	var wf paradigms.Workflows
	if err := json.Unmarshal(data, &wf); err != nil {
		t.Fatalf("%s: %v", workflowsJSON, err)
	}
	return wf
}
