package author

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// Window statuses (the proposals table's status column).
const (
	StatusProposed  = "candidate_proposed"
	StatusNone      = "no_proposal"
	StatusError     = "author_error"
	StatusDuplicate = "duplicate_filtered"
)

// WindowFamilies is how many author windows step opens (METHOD.md §5.3): none during the
// warm-up (steps before author.start_step), author.start_families at the start step, then one
// every author.interval steps; none when skill evolution is ablated.
func WindowFamilies(cfg *config.Config, step int) int {
	a := cfg.Author
	switch {
	case !skills.Enabled(cfg) || step < a.StartStep:
		return 0
	case step == a.StartStep:
		return a.StartFamilies
	case (step-a.StartStep)%a.Interval == 0:
		return 1
	}
	return 0
}

// Stage is the author stage. Author, when not nil, answers the windows instead of the
// configured author (New).
type Stage struct {
	Author Author
}

// Name is the stage's folder.
func (Stage) Name() string { return layout.Author }

// Inputs are the ledger state through validate step with its library, the author state of step
// − 1 (the evidence pool it carried and its count of windows without a candidate), the step's
// episodes when the pool is carried (it is updated every step) or a window opens, and, when a
// window opens, the task records and, for a model author, the decisions and executions of the
// episodes it may be shown. None when skill evolution is ablated.
func (Stage) Inputs(r *rundir.Folder, step int) (rundir.Resolved, error) {
	paths, err := authorInputs(r, step)
	return rundir.Files(paths), err
}

// authorInputs lists the author's input files for step.
func authorInputs(r *rundir.Folder, step int) ([]string, error) {
	cfg := r.Config
	if !skills.Enabled(cfg) {
		return nil, nil
	}
	paths := skills.LedgerInputs(r, step, layout.Author)
	if step > 1 {
		prev := r.StageDir(step-1, layout.Author)
		paths = append(paths, filepath.Join(prev, layout.AuthorStateFile))
		if carriesPool(cfg) {
			paths = append(paths, filepath.Join(prev, layout.EvidencePoolFile))
		}
	}
	windows := WindowFamilies(cfg, step) > 0
	if carriesPool(cfg) || windows {
		eps, err := r.ShardedInputs(step, layout.Rollout, layout.Episodes)
		if err != nil {
			return nil, err
		}
		paths = append(paths, eps[0]...)
	}
	if !windows {
		return paths, nil
	}
	paths = append(paths, r.TasksPath("train"))
	if cfg.Author.Backend != "sim" {
		st, _ := readState(r, step) // a missing state file is reported by the stage runner
		for _, j := range detailSteps(st.pool, step) {
			files, err := r.ShardedInputs(j, layout.Rollout, layout.Decisions, layout.Executions)
			if err != nil {
				return nil, err
			}
			paths = append(paths, slices.Concat(files...)...)
		}
	}
	return paths, nil
}

// Outputs are the proposals, the ledger segment, the library, the ledger state, the author
// state (evidence pool and windows without a candidate) and, on the simulated world, the
// proposed skills' hidden effects.
func (Stage) Outputs(r *rundir.Folder, _ int) []string {
	out := []string{layout.ProposalsFile, layout.LedgerFile, layout.SkillsFile, layout.LedgerStateFile, layout.EvidencePoolFile, layout.AuthorStateFile}
	if r.Config.Executor.Backend == "sim" {
		out = append(out, layout.SimTruthFile)
	}
	return out
}

// Run opens the step's author windows and writes proposals.arrow, the ledger segment (one
// proposal event per new candidate), the library, the ledger state, the author state after the
// step (evidence_pool.arrow, author_state.arrow) and, for the sim executor, sim_truth.arrow
// into sc.OutDir.
func (s Stage) Run(ctx context.Context, sc *rundir.StageContext) error {
	r, step, cfg := sc.Folder, sc.Step, sc.Folder.Config
	a := s.Author
	if a == nil {
		var err error
		if a, err = New(cfg); err != nil {
			return err
		}
	}
	if !skills.Enabled(cfg) {
		return write(sc.OutDir, sc.Lineage(), cfg, nil, skills.NewLedger(cfg.Admission, false), state{})
	}
	g, err := skills.LoadLedger(r, step, layout.Author)
	if err != nil {
		return err
	}
	prev, err := readState(r, step)
	if err != nil {
		return err
	}
	want := WindowFamilies(cfg, step)
	var current []schema.EpisodeRow
	if carriesPool(cfg) || want > 0 {
		if current, err = readEpisodes(r, step); err != nil {
			return err
		}
	}
	var rows []schema.ProposalRow
	if want > 0 {
		if rows, err = openWindows(ctx, r, step, want, a, g, prev, current); err != nil {
			return err
		}
	}
	return write(sc.OutDir, sc.Lineage(), cfg, rows, g, prev.after(cfg, current, rows))
}

// carriesPool reports whether the author carries an evidence pool from step to step
// (author.evidence_pool above 0).
func carriesPool(cfg *config.Config) bool { return cfg.Author.EvidencePool > 0 }

// state is what the author carries from step to step: the evidence pool by family (METHOD.md
// §5.4) and, by family, the windows that ended without a candidate (the window priority).
type state struct {
	pool   map[string][]schema.EpisodeRow
	failed map[string]int
}

// after is the state after a step with these natural episodes (current) and window rows: the
// pool re-ranked with the step's episodes (updatePool) and the step's windows without a
// candidate counted.
func (st state) after(cfg *config.Config, current []schema.EpisodeRow, rows []schema.ProposalRow) state {
	next := state{pool: updatePool(st.pool, current, cfg.Author.EvidencePool, cfg.Admission.SuccessThreshold), failed: maps.Clone(st.failed)}
	if next.failed == nil {
		next.failed = map[string]int{}
	}
	for _, p := range rows {
		if p.Status != StatusProposed {
			next.failed[p.Family]++
		}
	}
	return next
}

// readState reads the state the author of step − 1 wrote (empty at step 1; the pool empty when
// none is carried), checking that no family's pool exceeds author.evidence_pool.
func readState(r *rundir.Folder, step int) (state, error) {
	st := state{pool: map[string][]schema.EpisodeRow{}, failed: map[string]int{}}
	if step <= 1 {
		return st, nil
	}
	dir := r.StageDir(step-1, layout.Author)
	path := filepath.Join(dir, layout.AuthorStateFile)
	counts, err := schema.ReadFile[schema.AuthorStateRow](schema.AuthorState, path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, r.MissingInput(path)
	}
	if err != nil {
		return st, err
	}
	for i, c := range counts {
		if _, dup := st.failed[c.Family]; dup {
			return st, fmt.Errorf("%s: row %d: family %s appears twice", r.Rel(path), i, c.Family)
		}
		st.failed[c.Family] = int(c.FailedWindows)
	}
	if !carriesPool(r.Config) {
		return st, nil
	}
	path = filepath.Join(dir, layout.EvidencePoolFile)
	eps, err := schema.ReadFile[schema.EpisodeRow](schema.EvidencePool, path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, r.MissingInput(path)
	}
	if err != nil {
		return st, err
	}
	for i, e := range eps {
		if len(st.pool[e.Family]) == r.Config.Author.EvidencePool {
			return st, fmt.Errorf("%s: row %d: family %s holds more than author.evidence_pool = %d episodes", r.Rel(path), i, e.Family, r.Config.Author.EvidencePool)
		}
		st.pool[e.Family] = append(st.pool[e.Family], e)
	}
	return st, nil
}

// detailSteps are the steps whose decisions and executions a model author's examples need:
// step and those of the pool's episodes (an episode id starts with its step).
func detailSteps(pool map[string][]schema.EpisodeRow, step int) []int {
	out := []int{step}
	for _, eps := range pool {
		for _, e := range eps {
			prefix, _, _ := strings.Cut(e.EpisodeID, "/")
			if j, err := strconv.Atoi(prefix); err == nil && !slices.Contains(out, j) {
				out = append(out, j)
			}
		}
	}
	slices.Sort(out)
	return out
}

// readEpisodes reads the rollout episodes of step j (all shards).
func readEpisodes(r *rundir.Folder, j int) ([]schema.EpisodeRow, error) {
	paths, err := r.ShardedInputs(j, layout.Rollout, layout.Episodes)
	if err != nil {
		return nil, err
	}
	return schema.ReadFiles[schema.EpisodeRow](schema.Episodes, paths[0])
}

// openWindows chooses the window families by priority (families with training tasks that can
// take a candidate) and runs one window each. The windows of a wave are asked at once (up to the
// author's concurrency); their answers are collected by window index and judged, and recorded
// in the ledger, in window order, so every output is the one a sequential run writes whatever
// order the answers arrive in. A wave never holds more windows than the library has room for,
// so no window is asked that an earlier one's candidate would crowd out.
func openWindows(ctx context.Context, r *rundir.Folder, step, want int, a Author, g *skills.Ledger, prev state, current []schema.EpisodeRow) ([]schema.ProposalRow, error) {
	cfg := r.Config
	ev, err := loadEvidence(r, step, prev.pool, current, a.Backend() != "sim")
	if err != nil {
		return nil, err
	}
	st := map[string]FamilyStats{}
	for _, f := range cfg.Families {
		st[f] = familyStats(ev.byFamily[f].naturals(), cfg.Admission.SuccessThreshold)
	}
	order := WindowOrder(cfg.Families, g.Library(), want, ev.trained, prev.failed, st)
	var rows []schema.ProposalRow
	for len(order) > 0 {
		var wave []Window
		room := cfg.Admission.MaxLibrary - len(g.Library().Skills()) // candidates the library still takes
		for len(order) > 0 && len(wave) < max(room, 1) {
			f := order[0]
			order = order[1:]
			if !g.Library().CanPropose(f) { // an earlier window filled the library
				continue
			}
			w := Window{Step: step, Family: f, Seed: seed.Derive(cfg.Seed, "author", strconv.Itoa(step), f),
				Library: g.Library().Family(f), Stats: st[f]}
			w.TaskType, _ = cfg.TaskType(f)
			for _, e := range selectEvidence(ev.byFamily[f], cfg.Admission.SuccessThreshold, cfg.Author.MaxTrajectories) {
				w.Examples = append(w.Examples, ev.example(e, cfg.Admission.SuccessThreshold))
			}
			wave = append(wave, w)
		}
		for i, ans := range ask(ctx, a, wave) {
			row, err := judge(ctx, a, wave[i], ans, g)
			if err != nil {
				return nil, err
			}
			row.Window = int32(len(rows))
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// WindowOrder is the families that get a step's windows, in window order, at most want
// (METHOD.md §5.3): the families (config order) with training tasks that can take a candidate,
// sorted by priority over their skill counts, their earlier windows that proposed nothing
// (failed) and their natural-episode statistics (st).
func WindowOrder(families []string, lib *skills.Library, want int, trained map[string]bool, failed map[string]int, st map[string]FamilyStats) []string {
	count := map[string]int{}
	var open []string
	for _, f := range families {
		if lib.CanPropose(f) && trained[f] { // a family without training tasks has nothing to show
			open = append(open, f)
		}
		count[f] = len(lib.Family(f))
	}
	order := priority(open, count, failed, st)
	return order[:min(want, len(order))]
}

// answer is an author's reply to one window.
type answer struct {
	p   Proposal
	err error
}

// ask puts the windows to the author, at most concurrency(a) at once, windows handed out in
// order, and returns the answers by window index (one at a time: in window order).
func ask(ctx context.Context, a Author, ws []Window) []answer {
	out := make([]answer, len(ws))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(concurrency(a), len(ws)) {
		wg.Go(func() {
			for i := range next {
				out[i].p, out[i].err = a.Propose(ctx, ws[i])
			}
		})
	}
	for i := range ws {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// judge judges the author's answer to a window; only a failure to record an accepted candidate
// (or a cancelled run) is an error of the stage.
func judge(ctx context.Context, a Author, w Window, ans answer, g *skills.Ledger) (schema.ProposalRow, error) {
	row := schema.ProposalRow{Family: w.Family, Backend: a.Backend(), Seed: w.Seed, Plan: []string{}, Pitfalls: []string{}, Constraint: []string{}}
	for _, e := range w.Examples {
		row.Evidence = append(row.Evidence, e.Episode.EpisodeID)
	}
	if row.Evidence == nil {
		row.Evidence = []string{}
	}
	p, err := ans.p, ans.err
	row.TokensIn, row.TokensOut = p.TokensIn, p.TokensOut
	if p.Raw != "" {
		row.RawOutput = &p.Raw
	}
	reject := func(status string, why error) (schema.ProposalRow, error) {
		row.Status = status
		if why != nil {
			msg := why.Error()
			row.Reason = &msg
		}
		return row, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return row, ctx.Err()
		}
		return reject(StatusError, err)
	}
	if p.Record == nil {
		return reject(StatusNone, nil)
	}
	rec := p.Record.Canonical()
	id, hash := rec.ID(), rec.ContentHash()
	row.SkillID, row.ContentHash = &id, &hash
	row.Name, row.Description, row.Trigger = &rec.Name, &rec.Description, &rec.Trigger
	row.Plan, row.Pitfalls, row.Constraint = rec.Plan, rec.Pitfalls, rec.Constraint
	if _, dup := g.Library().Get(id); dup {
		return reject(StatusDuplicate, fmt.Errorf("skill %s is already in the library", id))
	}
	var prompts []string
	for _, e := range w.Examples {
		prompts = append(prompts, e.Task)
	}
	if err := checkRecord(rec, w.Library, prompts); err != nil {
		return reject(StatusError, err)
	}
	if _, err := g.Propose(w.Step, w.Family, rec); err != nil {
		return row, fmt.Errorf("window for %s: %w", w.Family, err)
	}
	row.Status = StatusProposed
	return row, nil
}

// write writes the stage's outputs: the window rows, what the ledger stage leaves
// (skills.WriteStage) and the author state after the step.
func write(outDir string, lin schema.Lineage, cfg *config.Config, rows []schema.ProposalRow, g *skills.Ledger, st state) error {
	if err := schema.WriteRows(schema.Proposals, filepath.Join(outDir, layout.ProposalsFile), lin, rows); err != nil {
		return err
	}
	if err := skills.WriteStage(outDir, lin, g); err != nil {
		return err
	}
	if err := st.write(outDir, lin); err != nil {
		return err
	}
	if cfg.Executor.Backend != "sim" {
		return nil
	}
	return schema.WriteRows(schema.SimTruth, filepath.Join(outDir, layout.SimTruthFile), lin, truths(cfg, rows))
}

// write writes the state as evidence_pool.arrow (families by name, each in its pool's rank
// order) and author_state.arrow (families by name) into dir.
func (st state) write(dir string, lin schema.Lineage) error {
	var pool []schema.EpisodeRow
	for _, f := range slices.Sorted(maps.Keys(st.pool)) {
		pool = append(pool, st.pool[f]...)
	}
	if err := schema.WriteRows(schema.EvidencePool, filepath.Join(dir, layout.EvidencePoolFile), lin, pool); err != nil {
		return err
	}
	var counts []schema.AuthorStateRow
	for _, f := range slices.Sorted(maps.Keys(st.failed)) {
		counts = append(counts, schema.AuthorStateRow{Family: f, FailedWindows: int64(st.failed[f])})
	}
	return schema.WriteRows(schema.AuthorState, filepath.Join(dir, layout.AuthorStateFile), lin, counts)
}

// truths are the hidden effects of the proposed skills in the simulated world.
func truths(cfg *config.Config, rows []schema.ProposalRow) []schema.SimTruthRow {
	w := sim.New(cfg.Sim, cfg.Seed)
	out := []schema.SimTruthRow{}
	for _, p := range rows {
		if p.Status != StatusProposed {
			continue
		}
		effect, class := w.SkillEffect(*p.SkillID)
		out = append(out, schema.SimTruthRow{Kind: "skill", ID: *p.SkillID, Family: &p.Family, Effect: &effect, EffectClass: &class})
	}
	slices.SortFunc(out, func(a, b schema.SimTruthRow) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// evidence holds the episodes an author may be shown, and, for a model author, what it is
// shown of them.
type evidence struct {
	byFamily   map[string]*familyEpisodes
	prompts    map[string]string                // task id -> prompt
	trained    map[string]bool                  // families with training tasks (tasks/train.arrow)
	actions    map[string][]string              // episode id -> action_json in t order
	executions map[string][]schema.ExecutionRow // episode id -> executions in order
}

// loadEvidence groups the step's episodes (current) beside the evidence pool carried over the
// earlier steps and reads the task prompts; details adds the decisions and executions a model
// author's examples show.
func loadEvidence(r *rundir.Folder, step int, pool map[string][]schema.EpisodeRow, current []schema.EpisodeRow, details bool) (*evidence, error) {
	ev := &evidence{prompts: map[string]string{}, trained: map[string]bool{}, actions: map[string][]string{}, executions: map[string][]schema.ExecutionRow{}}
	ev.byFamily = groupEpisodes(current, pool)
	if details {
		for _, j := range detailSteps(pool, step) {
			if err := ev.readDetails(r, j); err != nil {
				return nil, err
			}
		}
	}
	ts, err := tasks.ReadFile(r.TasksPath("train"))
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		ev.prompts[t.ID] = t.Prompt
		ev.trained[t.Family] = true
	}
	return ev, nil
}

// readDetails adds the actions and executions of step j's episodes.
func (ev *evidence) readDetails(r *rundir.Folder, j int) error {
	files, err := r.ShardedInputs(j, layout.Rollout, layout.Decisions, layout.Executions)
	if err != nil {
		return err
	}
	for _, p := range files[0] {
		rows, err := schema.ReadFile[schema.DecisionRow](schema.Decisions, p)
		if err != nil {
			return err
		}
		slices.SortStableFunc(rows, func(a, b schema.DecisionRow) int { return cmp.Compare(a.T, b.T) })
		for _, d := range rows {
			ev.actions[d.EpisodeID] = append(ev.actions[d.EpisodeID], d.ActionJSON)
		}
	}
	for _, p := range files[1] {
		rows, err := schema.ReadFile[schema.ExecutionRow](schema.Executions, p)
		if err != nil {
			return err
		}
		for _, x := range rows {
			ev.executions[x.EpisodeID] = append(ev.executions[x.EpisodeID], x)
		}
	}
	return nil
}

// example is one episode as the author is shown it: its last execution per node, in node order.
func (ev *evidence) example(e schema.EpisodeRow, threshold float64) Example {
	x := Example{Episode: e, Task: ev.prompts[e.TaskID], Success: e.Reward >= threshold}
	acts := ev.actions[e.EpisodeID]
	x.Actions = acts[:min(len(acts), maxActions)]
	last := map[string]schema.ExecutionRow{}
	var ids []string
	for _, r := range ev.executions[e.EpisodeID] {
		if _, ok := last[r.NodeID]; !ok {
			ids = append(ids, r.NodeID)
		}
		if p, ok := last[r.NodeID]; !ok || r.T > p.T || (r.T == p.T && r.ExecIndex > p.ExecIndex) {
			last[r.NodeID] = r
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(nodeIndex(a), nodeIndex(b)) })
	for _, id := range ids {
		r := last[id]
		n := Node{ID: id, Role: r.Role, Skills: r.Skills, Status: r.Status, AnswerPresent: r.AnswerPresent, Output: r.Output}
		if r.FailureKind != nil {
			n.FailureKind = *r.FailureKind
		}
		x.Nodes = append(x.Nodes, n)
	}
	return x
}

// nodeIndex is k of node id "nk" (ids are never reused), so n10 sorts after n9.
func nodeIndex(id string) int {
	k, err := strconv.Atoi(id[min(1, len(id)):])
	if err != nil {
		return -1
	}
	return k
}
