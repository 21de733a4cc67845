package report

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/probetable"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// Report is everything the report shows, rendered to HTML and Markdown by Write.
type Report struct {
	RunDir   string // the run folder it was built from: Write never writes into it or above it
	Title    string
	Sim      bool     // the run is on the simulated world (executor.backend: sim)
	Info     []Row    // label, value
	Sections []Figure // in reading order
}

// Figure is one section: an image (or, when there is nothing to plot, a note saying why), a
// caption saying how to read it, and an optional table.
type Figure struct {
	ID      string // anchor and PNG file stem
	Title   string
	PNG     []byte
	Note    string
	Caption string
	Table   *Table
}

// Section IDs, in reading order.
const (
	IDRewards    = "rewards"
	IDLoss       = "loss"
	IDAnchorAUC  = "anchor_auc"
	IDEdits      = "edit_outcomes"
	IDSkills     = "skills"
	IDEvaluation = "evaluation"
	IDCosts      = "costs"
)

// SimNotice is the label of a run on the simulated world.
const SimNotice = "Simulated world (executor.backend: sim): these numbers say whether the machinery works, not what any LLM scores."

// Build reads the run and computes every section.
func Build(r *rundir.Folder) (*Report, error) {
	d, err := load(r)
	if err != nil {
		return nil, err
	}
	if len(d.steps) == 0 {
		return nil, fmt.Errorf("report: run %s has no rolled-out step: %w", r.Name, r.MissingInput(filepath.Join(r.StageDir(1, layout.Rollout), layout.File(layout.Episodes))))
	}
	cfg := r.Config
	rep := &Report{RunDir: r.Dir, Title: "EvoSteer report: run " + r.Name, Sim: cfg.Executor.Backend == "sim"}
	first, last := d.steps[0], d.steps[len(d.steps)-1]
	backend := cfg.Executor.Backend
	if backend == "openai" {
		backend += " (" + cfg.Executor.OpenAI.Model + ")"
	}
	ablations := "none"
	if len(cfg.Ablations) > 0 {
		ablations = strings.Join(cfg.Ablations, ", ")
	}
	oods := slices.Sorted(maps.Keys(cfg.OODFamilies))
	pool, err := trainingPool(r)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	rep.Info = []Row{
		{Cells: []string{"run", r.Name}},
		{Cells: []string{"code version (init)", r.CodeVersion}},
		{Cells: []string{"config sha256", cfg.SHA256()}},
		{Cells: []string{"executor backend", backend}},
	}
	rep.Info = append(rep.Info, orchestratorRows(r, d.steps)...)
	rep.Info = append(rep.Info, []Row{
		{Cells: []string{"reference ρ", cfg.Reference()}},
		{Cells: []string{"objective", cfg.Objective}},
		{Cells: []string{"ablations", ablations}},
		{Cells: []string{"steps reported", fmt.Sprintf("%d–%d (%d step folders with rollouts)", first, last, len(d.steps))}},
		{Cells: []string{"episodes", fmt.Sprint(len(d.episodes))}},
		{Cells: []string{"batch", fmt.Sprintf("%d tasks × (%d π_θ + %d ρ rollouts)", cfg.Batch.Tasks, cfg.Batch.CurrentRollouts, cfg.Batch.ReferenceRollouts)}},
		{Cells: []string{"β, α", fmt.Sprintf("β = %g, α = %g", cfg.AnchorTB.Beta, cfg.Admission.Alpha)}},
		{Cells: []string{"families (IID)", strings.Join(cfg.Families, ", ")}},
		{Cells: []string{"families (OOD)", strings.Join(oods, ", ")}},
		{Cells: []string{"training pool", pool}},
		{Cells: []string{"admission", admissionSettings(cfg.Admission)}},
	}...)
	sfx := simSuffix(rep.Sim)
	for _, build := range []func() (Figure, error){
		func() (Figure, error) { return rewardsSection(d, sfx) },
		func() (Figure, error) { return lossSection(d, sfx) },
		func() (Figure, error) { return aucSection(d, cfg.Admission.SuccessThreshold, sfx) },
		func() (Figure, error) { return editSection(d, sfx) },
		func() (Figure, error) { return skillSection(r, d, sfx) },
		func() (Figure, error) { return evalSection(r, d) },
		func() (Figure, error) { return costSection(r, d) },
	} {
		f, err := build()
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", f.ID, err)
		}
		rep.Sections = append(rep.Sections, f)
	}
	probed, err := probetable.Steps(r)
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", IDProbe, err)
	}
	if len(probed) > 0 {
		f, err := probeSection(r, probed)
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", IDProbe, err)
		}
		rep.Sections = append(rep.Sections, f)
	}
	return rep, nil
}

func rewardsSection(d *data, sfx string) (f Figure, err error) {
	f = Figure{ID: IDRewards, Title: "Training curves: π_θ against ρ"}
	rs := Rewards(d.episodes)
	if len(rs) == 0 {
		f.Note = "The rollout files hold no episode yet."
		return f, nil
	}
	f.PNG, err = rewardsFigure("Mean reward, rolling over training steps"+sfx, rs)
	l, g := rs[len(rs)-1], RollingGap(rs, RollingWindow)[len(rs)-1]
	f.Caption = fmt.Sprintf("Above: mean reward of the healthy π_θ rollouts (source current) and of the natural rollouts "+
		"of the frozen reference ρ (natural_reference), averaged over the last %d steps (paper Fig. 3b; the ρ curve "+
		"moves with the batch although ρ does not), and the fraction of each step's episodes, every source, that are "+
		"unhealthy and left out of learning. Below: θ − ρ in points, the mean over the same steps of each step's "+
		"difference (both sources play the step's tasks, so the difference removes the batch's difficulty), with a band "+
		"of ±2 standard errors of that mean: a band clear of zero is a gain the noise does not explain. Step %d: π_θ %.3f "+
		"over %d episodes, ρ %.3f over %d, unhealthy %d of %d; θ − ρ over the last %d steps %+.2f ± %.2f points.",
		RollingWindow, l.Step, l.Theta, l.NTheta, l.Rho, l.NRho, l.NUnhealthy, l.Episodes, g.Steps, 100*g.Gap, 200*g.SE)
	return f, err
}

func lossSection(d *data, sfx string) (f Figure, err error) {
	f = Figure{ID: IDLoss, Title: "AnchorTB loss against the anchor-only level"}
	if len(d.metrics) == 0 {
		f.Note = "No update has run yet (no step-NNNNNN/update/update_metrics.arrow): run `evosteer update`."
		return f, nil
	}
	ms := slices.Clone(d.metrics)
	slices.SortStableFunc(ms, func(a, b stepMetrics) int { return a.Step - b.Step })
	f.PNG, err = lossFigure("Batch loss per step"+sfx, ms)
	l := ms[len(ms)-1]
	f.Caption = fmt.Sprintf("Batch mean of the %s loss per update (update_metrics): loss with the learned parts; "+
		"loss_rho, the same loss with every Δℓ = 0; loss_anchor, the anchor-only level, with Δℓ = 0 and b_ψ = 0, so "+
		"that each flow is its measured part clip(u + c(g)) (paper Fig. 3b). The learned part helps where loss lies "+
		"below loss_anchor. Step %d: loss %.4f, loss_rho %.4f, loss_anchor %.4f, gain (loss_rho − loss) %+.4f.",
		l.Objective, l.Step, l.Loss, l.LossRho, l.LossAnchor, l.Gain)
	return f, err
}

func aucSection(d *data, threshold float64, sfx string) (f Figure, err error) {
	f = Figure{ID: IDAnchorAUC, Title: "Anchor AUC against the task-family mean"}
	pts := AnchorAUC(d.anchors, d.episodes, threshold)
	how := fmt.Sprintf("AUC (Mann–Whitney, ties counted one half) for predicting the success (reward ≥ %g) of "+
		"every healthy natural-reference rollout of steps %d..k from its leave-one-out task anchor p̂ (the "+
		"anchors table: the pool of reference outcomes through step k without the episode itself), against the "+
		"shrunk task-family mean m_category of the same pool (which keeps the episode) as predictor "+
		"(paper Fig. 4c). Cumulative: the point at step k pools steps %d..k.", threshold, FirstAUCStep, FirstAUCStep)
	var valid []AUCPoint
	for _, p := range pts {
		if !math.IsNaN(p.PHat) {
			valid = append(valid, p)
		}
	}
	if len(valid) == 0 {
		f.Note = fmt.Sprintf("Not computable yet: it needs aggregated natural-reference rollouts of step %d or later with both outcomes.", FirstAUCStep)
		f.Caption = how
		return f, nil
	}
	f.PNG, err = aucFigure("Anchor AUC, cumulative"+sfx, valid)
	l := valid[len(valid)-1]
	f.Caption = how + fmt.Sprintf(" Through step %d: AUC of p̂ %.3f, of the family mean %.3f, over %d episodes "+
		"(%d successes, %d failures).", l.Step, l.PHat, l.Family, l.Positives+l.Negatives, l.Positives, l.Negatives)
	return f, err
}

func editSection(d *data, sfx string) (f Figure, err error) {
	f = Figure{ID: IDEdits, Title: "In-run edit outcomes by type"}
	sourceOf := make(map[string]string, len(d.episodes))
	for _, e := range d.episodes {
		sourceOf[e.EpisodeID] = e.Source
	}
	counts := EditOutcomes(d.decisions, sourceOf)
	how := "An edit (any action but STOP) is better, the same or worse when the grader's score of the designated " +
		"output rises, stays or falls from just before it (the previous decision's output_score) to just after it, " +
		"on the same trajectory (paper Fig. 4e); edits while either score is null (no output node) have no outcome " +
		"and are left out. Bars give shares per action kind; n is the number of edits with an outcome."
	f.Table = &Table{Header: []string{"rollouts", "action kind", "edits", "better", "same", "worse"}, Labels: 2}
	total := map[string][3]int{}
	for _, c := range counts {
		t := total[c.Source]
		for _, o := range Outcomes {
			t[o] += c.N[o]
		}
		total[c.Source] = t
		if c.Total() == 0 {
			continue
		}
		f.Table.Rows = append(f.Table.Rows, Row{Cells: []string{sourceLabel(c.Source), c.Kind, fmt.Sprint(c.Total()),
			share(c.N[Better], c.Total()), share(c.N[Same], c.Total()), share(c.N[Worse], c.Total())}})
	}
	if len(f.Table.Rows) == 0 {
		f.Note, f.Caption, f.Table = "No edit with an outcome yet (no decision with an output score before and after it).", how, nil
		return f, nil
	}
	var sums []string
	for _, src := range []string{SourceTheta, SourceRho} {
		t := total[src]
		n := t[0] + t[1] + t[2]
		sums = append(sums, fmt.Sprintf("%s: %d edits, %s better, %s worse", sourceLabel(src), n, share(t[Better], n), share(t[Worse], n)))
	}
	f.Caption = how + " " + strings.Join(sums, "; ") + "."
	f.PNG, err = editFigure("Edit outcomes"+sfx, counts)
	return f, err
}

func sourceLabel(src string) string {
	return map[string]string{SourceTheta: "π_θ", SourceRho: "ρ"}[src]
}

// share renders k of n as "k (p%)".
func share(k, n int) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%.1f%%)", k, 100*float64(k)/float64(n))
}

func skillSection(r *rundir.Folder, d *data, sfx string) (f Figure, err error) {
	f = Figure{ID: IDSkills, Title: "Skill admission decisions and alpha spent"}
	cfg := r.Config
	if !skills.Enabled(cfg) {
		f.Note = "Skill evolution is ablated in this run (ablations: skill-evolution): no skills, no ledger events."
		return f, nil
	}
	first, last := d.steps[0], d.steps[len(d.steps)-1]
	all := make([]int, 0, last-first+1)
	for s := first; s <= last; s++ {
		all = append(all, s)
	}
	tl := SkillTimeline(d.segments, all)
	events := 0
	for _, s := range tl {
		for _, n := range s.Events {
			events += n
		}
	}
	if events == 0 {
		f.Note = fmt.Sprintf("No skill events yet: the author starts at step %d (author.start_step) and this run's "+
			"ledger has no proposal, promotion or retirement through step %d (warm-up). Alpha spent: 0 of %g.",
			cfg.Author.StartStep, last, cfg.Admission.Alpha)
		return f, nil
	}
	f.PNG, err = skillFigure("Skill admission"+sfx, tl, cfg.Admission.Alpha)
	if err != nil {
		return f, err
	}
	status := map[string]int{}
	for _, s := range d.library {
		status[s.Status]++
	}
	lib := "no library snapshot"
	if d.libPath != "" {
		lib = fmt.Sprintf("the library (%s) holds %d skills: %d candidate, %d validated, %d retired", d.libPath,
			len(d.library), status[skills.Candidate], status[skills.Validated], status[skills.Retired])
	}
	decisions := SkillDecisions(d.segments, d.library)
	f.Caption = fmt.Sprintf("Top: the admission ledger's events per step (proposal: the author added a candidate; "+
		"promote/retire: a sequential sign-test look rejected; retain: a validated skill passed its re-test; defer: "+
		"a look rejected nothing; defer_capacity: the family is full; supersede: a comparison's context changed). "+
		"Bottom: the cumulative alpha spent by the looks, against the run's budget α = %g (admission.alpha). "+
		"Through step %d: %d promotions and retirements, alpha spent %.4g; %s.",
		cfg.Admission.Alpha, last, len(decisions), tl[len(tl)-1].AlphaSpent, lib)
	if len(decisions) == 0 {
		f.Caption += " No promotion or retirement yet."
		return f, nil
	}
	f.Table = &Table{Header: []string{"step", "event", "skill", "name", "j", "look", "W", "L", "T0", "p₊", "p₋", "level"}, Labels: 4}
	for _, e := range decisions {
		f.Table.Rows = append(f.Table.Rows, Row{Cells: []string{fmt.Sprint(e.Step), e.Event, str(e.SkillID), e.Name,
			num(e.J), num(e.Look), num(e.W), num(e.L), num(e.T0), flt(e.PPlus), flt(e.PMinus), flt(e.Level)}})
	}
	return f, nil
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func num(p *int64) string {
	if p == nil {
		return ""
	}
	return fmt.Sprint(*p)
}

func flt(p *float64) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("%.4g", *p)
}

func evalSection(r *rundir.Folder, d *data) (f Figure, err error) {
	f = Figure{ID: IDEvaluation, Title: "Evaluation"}
	if !d.evalFound {
		f.Note = fmt.Sprintf("Not evaluated yet (no %s): run `evosteer eval --run %s`.", EvalFile, r.Dir)
		return f, nil
	}
	order := append(slices.Clone(r.Config.Families), slices.Sorted(maps.Keys(r.Config.OODFamilies))...)
	t, err := BuildEvalTable(d.eval, order, d.evalNA)
	if err != nil {
		return f, fmt.Errorf("%s: %w", EvalFile, err)
	}
	runs := 0
	for _, e := range d.eval {
		runs = max(runs, int(e.Run)+1)
	}
	f.Table = t.Table()
	f.Caption = fmt.Sprintf("Test scores ×100 (%s), in the shape of the paper's Table 1: mean ± standard deviation "+
		"over evaluation runs with different seeds (up to %d here); each block's Avg row is the mean of its benchmark "+
		"means ± sqrt(Σ σ_b²)/n over its n benchmarks (paper appendix D); – marks a policy not evaluated on a "+
		"benchmark (or, in an Avg row, on one of the block's benchmarks), n/a one that cannot be, with the reason.", EvalFile, runs)
	if f.PNG, err = paperFigure("This run against the paper's Table 2", t); err != nil {
		return f, err
	}
	if f.PNG != nil {
		f.Caption += " The figure puts every cell the paper measured (evosteer is its full method) at the paper's score " +
			"(x) and this run's (y): on the dashed diagonal they agree; a policy's points above it score higher here. " +
			"On the simulated world the baselines are what the world is calibrated to, the trained row its prediction."
	}
	return f, nil
}

// trainingPool describes the run's training tasks: how many, over how many families, and the
// pilot that chose them (tasks.pilot).
func trainingPool(r *rundir.Folder) (string, error) {
	train, err := tasks.ReadFile(r.TasksPath("train"))
	if errors.Is(err, fs.ErrNotExist) {
		return "no task records in the run", nil
	}
	if err != nil {
		return "", err
	}
	families := map[string]bool{}
	for _, t := range train {
		families[t.Family] = true
	}
	out := fmt.Sprintf("%d tasks over %d families", len(train), len(families))
	if pl := r.Config.Tasks.Pilot; pl != nil {
		out += fmt.Sprintf(" (a pilot's: %d solver-only samples per task, 0 < p̂ < 1 kept", pl.Samples)
		if len(pl.ExcludeFamilies) > 0 {
			out += "; " + strings.Join(pl.ExcludeFamilies, ", ") + " left out"
		}
		out += ")"
	}
	return out, nil
}

// admissionSettings names the settings that decide when the sign test looks and which pairs count.
func admissionSettings(a config.Admission) string {
	out := fmt.Sprintf("a look every %d step(s)", a.ValidationInterval)
	if a.AllowRepeatedTasks {
		out += ", repeated pair tasks"
	}
	if a.UndecidedWhenExhausted {
		out += ", exhausted comparisons end undecided"
	}
	if !a.Spending.IsZero() {
		out += ", " + string(a.Spending) + " spending"
	}
	return out
}
