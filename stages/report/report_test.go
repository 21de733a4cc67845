package report

import (
	"bytes"
	"fmt"
	"image/png"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/probetable"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

// synthRun writes two hand-made steps into a new run: per step two tasks with two θ and two ρ
// episodes each, their decisions (ADD_AGENT, SET_OUTPUT, RERUN_AGENT, STOP), anchors and one
// update_metrics row. Step 2's ρ rewards are 1, 0, 1, 0 with p̂ .8, .2, .6, .4 (AUC 1) and a
// family mean of .5 for all (AUC ½).
func synthRun(t *testing.T) *rundir.Folder {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	r, err := rundir.Init(filepath.Join(t.TempDir(), "synth"), cfg, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 2; step++ {
		var eps []schema.EpisodeRow
		var decs []schema.DecisionRow
		var anchors []schema.AnchorRow
		for _, src := range []string{SourceTheta, SourceRho} {
			for task := range 2 {
				for k := range 2 {
					id := fmt.Sprintf("%d/medqa/sim-%d/%s/%d", step, task, src, k)
					reward := float64((task + k + 1) % 2) // 1, 0, 0, 1 per source
					if src == SourceRho && step == 2 {
						reward = float64(1 - k)
					}
					eps = append(eps, schema.EpisodeRow{EpisodeID: id, TaskID: fmt.Sprintf("medqa/sim-%d", task), Family: "medqa",
						Split: "train", ControllerCount: schema.ControllerCountEstimated, Source: src, Reward: reward, Healthy: true, T: 4})
					// After RERUN_AGENT the score becomes the reward: better when 1 (from 0).
					for t, kind := range []string{"ADD_AGENT", "SET_OUTPUT", "RERUN_AGENT", "STOP"} {
						d := schema.DecisionRow{EpisodeID: id, T: int32(t), ActionKind: kind, LegalActions: []string{kind}, PriorLogits: []float32{0}}
						switch {
						case t == 1:
							d.OutputScore = f64(0)
						case t > 1:
							d.OutputScore = f64(reward)
						}
						decs = append(decs, d)
					}
					pHat := []float64{0.8, 0.2, 0.6, 0.4}[task*2+k]
					anchors = append(anchors, schema.AnchorRow{EpisodeID: id, TaskID: fmt.Sprintf("medqa/sim-%d", task), Family: "medqa",
						MCategory: 0.5, PHat: pHat, LOO: src == SourceRho})
				}
			}
		}
		lin := func(stage string) schema.Lineage { return schema.Lineage{Run: r.Name, Step: step, Stage: stage} }
		roll := r.StageDir(step, layout.Rollout)
		write(t, schema.WriteRows(schema.Episodes, filepath.Join(roll, "episodes.arrow"), lin("rollout"), eps))
		write(t, schema.WriteRows(schema.Decisions, filepath.Join(roll, "decisions.arrow"), lin("rollout"), decs))
		write(t, schema.WriteRows(schema.Anchors, filepath.Join(r.StageDir(step, layout.Aggregate), layout.AnchorsFile), lin("aggregate"), anchors))
		m := schema.UpdateMetricsRow{Objective: "anchortb", Loss: 0.5 - 0.1*float64(step), LossRho: 0.5, LossAnchor: 0.6}
		write(t, schema.WriteRows(schema.UpdateMetrics, filepath.Join(r.StageDir(step, layout.Update), layout.UpdateMetricsFile), lin("update"), []schema.UpdateMetricsRow{m}))
	}
	return r
}

func write(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func section(t *testing.T, rep *Report, id string) Figure {
	t.Helper()
	for _, f := range rep.Sections {
		if f.ID == id {
			return f
		}
	}
	t.Fatalf("no section %s", id)
	return Figure{}
}

func TestBuildFromRunFiles(t *testing.T) {
	r := synthRun(t)
	rep, err := Build(r)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range rep.Sections {
		ids = append(ids, f.ID)
	}
	if got := strings.Join(ids, " "); got != "rewards loss anchor_auc edit_outcomes skills evaluation costs" {
		t.Fatalf("sections %s", got)
	}
	for _, id := range []string{IDRewards, IDLoss, IDAnchorAUC, IDEdits} {
		f := section(t, rep, id)
		img, err := png.Decode(bytes.NewReader(f.PNG))
		if err != nil || img.Bounds().Dx() != 900 {
			t.Errorf("%s: PNG %v, %v", id, err, img)
		}
	}
	for id, want := range map[string]string{
		IDRewards:   "Step 2: π_θ 0.500 over 4 episodes, ρ 0.500 over 4, unhealthy 0 of 8; θ − ρ over the last 2 steps +0.00 ± 0.00 points.",
		IDLoss:      "Step 2: loss 0.3000, loss_rho 0.5000, loss_anchor 0.6000",
		IDAnchorAUC: "Through step 2: AUC of p̂ 1.000, of the family mean 0.500, over 4 episodes (2 successes, 2 failures).",
		// Every episode's RERUN_AGENT goes from 0 to its reward; ADD_AGENT and SET_OUTPUT have no before.
		IDEdits: "π_θ: 8 edits, 4 (50.0%) better, 0 (0.0%) worse; ρ: 8 edits, 4 (50.0%) better, 0 (0.0%) worse.",
	} {
		if c := section(t, rep, id).Caption; !strings.Contains(c, want) {
			t.Errorf("%s caption lacks %q:\n%s", id, want, c)
		}
	}
	if f := section(t, rep, IDSkills); f.PNG != nil || !strings.Contains(f.Note, "No skill events yet: the author starts at step 9") {
		t.Errorf("skills in warm-up: %+v", f)
	}
	if f := section(t, rep, IDEvaluation); f.Table != nil || !strings.Contains(f.Note, "Not evaluated yet") {
		t.Errorf("evaluation before eval: %+v", f)
	}

	// A promotion at step 2 and an evaluation file: both sections fill in.
	id := "evosteer-00000000000000000001"
	w, l, j, look := int64(9), int64(0), int64(1), int64(1)
	pp, lvl := 1.0/512, 0.0125
	seg := []schema.LedgerRow{{Seq: 1, Event: skills.EventProposal, SkillID: &id},
		{Seq: 2, Event: skills.EventLook, SkillID: &id, AlphaSpent: lvl},
		{Seq: 3, Event: skills.EventPromote, SkillID: &id, J: &j, Look: &look, W: &w, L: &l, PPlus: &pp, Level: &lvl, AlphaSpent: lvl}}
	lin := schema.Lineage{Run: r.Name, Step: 2, Stage: layout.Validate}
	write(t, skills.WriteSegment(r.StageDir(2, layout.Validate), lin, seg))
	write(t, schema.WriteRows(schema.Skills, filepath.Join(r.StageDir(2, layout.Validate), layout.SkillsFile), lin,
		[]schema.SkillRow{{SkillID: id, Family: "medqa", Status: skills.Validated, Basis: skills.BasisSignTest, Name: "cite the guideline"}}))
	write(t, schema.WriteRows(schema.EvalResults, filepath.Join(r.Dir, EvalFile), schema.Lineage{Run: r.Name, Stage: "eval"},
		[]schema.EvalRow{{Policy: "evosteer", Benchmark: "medqa", Block: "iid", Score: 0.5, ControllerCount: schema.ControllerCountEstimated}, {Policy: "evosteer", Benchmark: "medqa", Block: "iid", Run: 1, Score: 0.7, ControllerCount: schema.ControllerCountEstimated}}))
	rep, err = Build(r)
	if err != nil {
		t.Fatal(err)
	}
	sk := section(t, rep, IDSkills)
	if sk.PNG == nil || sk.Table == nil || len(sk.Table.Rows) != 1 ||
		strings.Join(sk.Table.Rows[0].Cells, ",") != "2,promote,"+id+",cite the guideline,1,1,9,0,,0.001953,,0.0125" ||
		!strings.Contains(sk.Caption, "1 promotions and retirements, alpha spent 0.0125; the library (step-000002/validate/skills.arrow) holds 1 skills: 0 candidate, 1 validated") {
		t.Errorf("skills: caption %q, table %+v", sk.Caption, sk.Table)
	}
	ev := section(t, rep, IDEvaluation)
	if ev.Table == nil || !strings.Contains(ev.Table.Markdown(), "| medqa | 60.00 ± 14.14 |") {
		t.Errorf("evaluation: %+v", ev)
	}
}

// TestWriteNeverReplacesOtherFiles: --out is replaced only when it is new, empty or an earlier
// report; a folder with a user's index.html, a site, the run folder and a folder above the run
// are refused and left exactly as they were.
func TestWriteNeverReplacesOtherFiles(t *testing.T) {
	r := synthRun(t)
	rep, err := Build(r)
	if err != nil {
		t.Fatal(err)
	}
	files := func(dir string) string {
		var out []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, "\n")
	}
	mk := func(dir string, names ...string) string {
		for _, n := range names {
			write(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755))
			write(t, os.WriteFile(filepath.Join(dir, n), []byte("<h1>x</h1>"), 0o644))
		}
		return dir
	}
	base := t.TempDir()
	refused := map[string]string{
		"a page and notes":   mk(filepath.Join(base, "webproj"), "index.html", "notes.md"),
		"a site":             mk(filepath.Join(base, "site"), "index.html", "style.css", "img/logo.png"),
		"a foreign page":     mk(filepath.Join(base, "page"), "index.html"),
		"the run folder":     r.Dir,
		"a folder above it":  filepath.Dir(r.Dir),
		"the run via a link": filepath.Join(base, "link"),
	}
	write(t, os.Symlink(r.Dir, refused["the run via a link"]))
	for name, dir := range refused {
		before := files(dir)
		if err := rep.Write(dir); err == nil {
			t.Errorf("%s: --out %s was accepted", name, dir)
		} else if !strings.Contains(err.Error(), "choose another --out") {
			t.Errorf("%s: %v, want a refusal that says to choose another --out", name, err)
		}
		if after := files(dir); after != before {
			t.Errorf("%s: the folder changed:\n%s\nwas\n%s", name, after, before)
		}
	}
	// New, empty and an earlier report (with a figure of an older version) are replaced.
	empty := filepath.Join(base, "empty")
	write(t, os.Mkdir(empty, 0o755))
	write(t, rep.Write(filepath.Join(base, "new", "report")))
	write(t, rep.Write(empty))
	write(t, os.WriteFile(filepath.Join(empty, "retired_figure.png"), nil, 0o644))
	write(t, rep.Write(empty))
	if _, err := os.Stat(filepath.Join(empty, "retired_figure.png")); err == nil {
		t.Error("an earlier report's files outlived the rewrite")
	}
}

var srcAttr = regexp.MustCompile(`(?:src|href)="([^"]*)"`)

func TestWriteIsSelfContainedDeterministicAndAtomic(t *testing.T) {
	r := synthRun(t)
	rep, err := Build(r)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(r.Dir, "report")
	write(t, rep.Write(out))
	write(t, os.WriteFile(filepath.Join(out, "stale.png"), []byte("old"), 0o644))
	write(t, rep.Write(out))
	// A folder of other files is not replaced.
	if err := rep.Write(r.Dir); err == nil || !strings.Contains(err.Error(), "is the run folder") {
		t.Errorf("writing over the run folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, rundir.RunFileName)); err != nil {
		t.Fatal(err)
	}
	again, err := Build(r)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "copy")
	write(t, again.Write(other))

	names := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	want := "anchor_auc.png edit_outcomes.png index.html loss.png report.md rewards.png"
	if got := strings.Join(names(out), " "); got != want {
		t.Errorf("report folder holds %s, want %s (the stale file replaced with the folder)", got, want)
	}
	for _, n := range names(r.Dir) {
		if strings.Contains(n, "tmp") || strings.Contains(n, ".old-") {
			t.Errorf("left in the run folder: %s", n)
		}
	}
	for _, n := range names(out) {
		a, _ := os.ReadFile(filepath.Join(out, n))
		b, _ := os.ReadFile(filepath.Join(other, n))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two reports of the same run", n)
		}
	}

	html, _ := os.ReadFile(filepath.Join(out, HTMLFile))
	page := string(html)
	imgs := 0
	for _, m := range srcAttr.FindAllStringSubmatch(page, -1) {
		switch {
		case strings.HasPrefix(m[1], "data:image/png;base64,"):
			imgs++
		case !strings.HasPrefix(m[1], "#"):
			t.Errorf("external reference %q", m[1])
		}
	}
	if imgs != 4 || strings.Contains(page, "<link") || strings.Contains(page, "<script") || strings.Contains(page, "url(") {
		t.Errorf("index.html: %d embedded images, want 4, and no linked resource", imgs)
	}
	if !strings.Contains(page, SimNotice) {
		t.Error("index.html lacks the simulated-world notice")
	}
	md, _ := os.ReadFile(filepath.Join(out, MarkdownFile))
	for _, want := range []string{"> **" + SimNotice + "**", "![Training curves: π_θ against ρ](rewards.png)", "## 6. Evaluation", "*Not evaluated yet"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

func TestBuildWithoutRolloutsFails(t *testing.T) {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	r, err := rundir.Init(filepath.Join(t.TempDir(), "empty"), cfg, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(r); err == nil || !strings.Contains(err.Error(), "missing input step-000001/rollout/episodes.arrow: run `evosteer rollout --step 1 --run "+r.Dir+"` first") {
		t.Errorf("error %v", err)
	}
}

// Probed steps add the probe section: the overall row of each probed step, per family for the
// last, and the last step's verdict in the caption.
func TestProbeSection(t *testing.T) {
	r := synthRun(t)
	rows := func(logTheta func(lr, lp float64) float64) []schema.ProbeRow {
		var out []schema.ProbeRow
		for _, family := range []string{"medqa", "hotpotqa"} {
			// ρ = (½, ½), m = (0.2, 0.6), β = ln 2: U = (1.2, 1.6), π* = (3/7, 4/7).
			for a, m := range []float64{0.2, 0.6} {
				p := []float64{3.0 / 7, 4.0 / 7}[a]
				lt := logTheta(math.Log(0.5), math.Log(p))
				target := lt - math.Log(0.5) // θ sits on its loss's target
				out = append(out, schema.ProbeRow{TaskID: family + "/t", Family: family, ActionIndex: int32(a), Role: []string{"solver", "planner"}[a],
					Beta: math.Ln2, Rho: 0.5, Theta: math.Exp(lt), PiStar: p, LogRho: math.Log(0.5), LogTheta: lt, U: 1 + m, UEven: 1 + m, UOdd: 1 + m, MeanReward: m, Continuations: 8,
					LossTarget: &target, LossTargetN: 40})
			}
		}
		return out
	}
	for step, lt := range map[int]func(lr, lp float64) float64{1: func(lr, _ float64) float64 { return lr }, 3: func(_, lp float64) float64 { return lp }} {
		write(t, schema.WriteRows(schema.Probe, filepath.Join(probetable.StepDir(r, step), probetable.TableFile), schema.Lineage{Run: r.Name, Step: step, Stage: probetable.Folder}, rows(lt)))
	}
	rep, err := Build(r)
	if err != nil {
		t.Fatal(err)
	}
	f := section(t, rep, IDProbe)
	if f.Table == nil || len(f.Table.Rows) != 4 {
		t.Fatalf("probe table %+v", f.Table)
	}
	md := f.Table.Markdown()
	for _, want := range []string{
		"| **1** | **all** | **2** | **40.00** | **+0.00** | **+2.86** | **+20.00** | **0.000** | **0.000** | **0.00** | **0.0714** | **0.0714** | **0.000** |",
		"| 3 | medqa | 1 | 40.00 | +2.86 | +2.86 | +20.00 | 1.000 | 1.000 | 0.00 | 0.0000 | 0.0714 | 1.000 | 0.0000 | 0.0102 | 1.000 | 1.000 |",
		"| **0.0102** | **0.0102** | **—** | **0.000** |", // step 1: θ = ρ, so no slope on log(θ/ρ); the target asks for none of π*'s tilt
		"| **3** | **all** | **2** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("probe table lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(f.Caption, "Steps 1, 3 probed") || !strings.Contains(f.Caption, "θ is limited by its target") {
		t.Errorf("caption %s", f.Caption)
	}
}
