package paradigms

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// Grammar is the searched workflow's template space, in a fixed order (the last tie-break), each
// named by its shape:
//
//	single   W                           one agent
//	chain    A>B                         A's output goes to B, B is the output
//	pipeline planner>W>verifier
//	ensemble kxW>G                       k workers, an aggregator over all of them (k = 2, 3)
//	mixed    solver+researcher+tool_user>verifier
//	vote     3xW:majority                three workers, the majority answer is the output
//
// with workers W ∈ {solver, researcher, tool_user}, A ∈ {planner} ∪ W, B ∈ {solver, verifier,
// finalizer} (A ≠ B) and aggregators G ∈ {verifier, finalizer}. A template whose roles a task
// type does not offer (tool_user without tools) is skipped there.
func Grammar() []Template {
	workers := []string{"solver", "researcher", "tool_user"}
	var out []Template
	add := func(name, output string, agents ...Agent) {
		out = append(out, Template{Name: name, Agents: agents, Output: output})
	}
	for _, w := range workers {
		add(w, OutputLast, Agent{Role: w})
	}
	for _, a := range append([]string{"planner"}, workers...) {
		for _, b := range []string{"solver", "verifier", "finalizer"} {
			if a != b {
				add(a+">"+b, OutputLast, Agent{Role: a}, Agent{Role: b, Inputs: []int{0}})
			}
		}
	}
	for _, w := range workers {
		add("planner>"+w+">verifier", OutputLast, Agent{Role: "planner"}, Agent{Role: w, Inputs: []int{0}}, Agent{Role: "verifier", Inputs: []int{1}})
	}
	for _, w := range workers {
		for _, k := range []int{2, 3} {
			for _, g := range []string{"verifier", "finalizer"} {
				agents := make([]Agent, k, k+1)
				in := make([]int, k)
				for i := range k {
					agents[i], in[i] = Agent{Role: w}, i
				}
				add(fmt.Sprintf("%dx%s>%s", k, w, g), OutputLast, append(agents, Agent{Role: g, Inputs: in})...)
			}
		}
	}
	add("solver+researcher+tool_user>verifier", OutputLast, Agent{Role: "solver"}, Agent{Role: "researcher"}, Agent{Role: "tool_user"},
		Agent{Role: "verifier", Inputs: []int{0, 1, 2}})
	for _, w := range workers {
		add("3x"+w+":majority", OutputMajority, Agent{Role: w}, Agent{Role: w}, Agent{Role: w})
	}
	return out
}

// SearchOptions configure the workflow search.
type SearchOptions struct {
	Templates []Template // the candidates; nil means Grammar()
	PerFamily int        // training tasks sampled per task type (all when fewer)
	// Finalists, when positive, re-plays the best Finalists templates of each task type on
	// FinalPerFamily tasks (a larger sample holding the first) and chooses among them by that
	// score: a choice over a few dozen tasks is a winner's curse.
	Finalists      int
	FinalPerFamily int
	Seed           uint64           // the task sample and the episode seeds derive from it
	Progress       episode.Progress // told after every episode; may be nil
	// TaskTypes are the task types the workflows are wanted for (an evaluation's test split);
	// one without a training task gets no workflow and is listed in SearchResult.Unsearched.
	TaskTypes []string
}

// Score is one template's result on one task type's sample.
type Score struct {
	TaskType  string  `json:"task_type"`
	Template  string  `json:"template"`
	Episodes  int     `json:"episodes"`
	Unhealthy int     `json:"unhealthy"` // scored as reward 0
	Mean      float64 `json:"mean_reward"`
	Tokens    float64 `json:"mean_tokens"` // input plus output tokens per episode
}

// SearchResult is the frozen workflow per task type and every score it was chosen from.
type SearchResult struct {
	Workflows Workflows `json:"workflows"`
	Scores    []Score   `json:"scores"`
	// Unsearched are the wanted task types (SearchOptions.TaskTypes) with no workflow, each
	// with the reason: searched_workflow cannot be evaluated on their benchmarks.
	Unsearched map[string]string `json:"unsearched,omitempty"`
}

// NoTrainingTasks is why a task type has no searched workflow: the training split (e.g. a
// pilot pool that leaves the family out) has no task of that type to search on.
func NoTrainingTasks(taskType string) string {
	return fmt.Sprintf("no training task of type %s to search a workflow on", taskType)
}

// Unavailable maps every benchmark of cfg (its IID families and OOD benchmarks) whose task type
// has no searched workflow to the reason (Unsearched); nil when there is none.
func (r *SearchResult) Unavailable(cfg *config.Config) map[string]string {
	if r == nil || len(r.Unsearched) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, b := range append(slices.Clone(cfg.Families), slices.Sorted(maps.Keys(cfg.OODFamilies))...) {
		if tt, ok := cfg.TaskType(b); ok && r.Unsearched[tt] != "" {
			out[b] = r.Unsearched[tt]
		}
	}
	return out
}

// UnavailableCells decodes a search's record (eval/workflows.json as evaluate writes it, read
// from path by the caller; nil when there is none) into the evaluation cells no score fills:
// searched_workflow → benchmark → the reason (Unavailable); nil when every benchmark has a
// workflow.
func UnavailableCells(path string, record []byte, cfg *config.Config) (map[string]map[string]string, error) {
	if record == nil {
		return nil, nil
	}
	var searched SearchResult
	if err := json.Unmarshal(record, &searched); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if na := searched.Unavailable(cfg); len(na) > 0 {
		return map[string]map[string]string{SearchedWorkflow: na}, nil
	}
	return nil, nil
}

// Search is the AFlow-style offline search of searched_workflow: every template of the grammar
// that a task type's roles admit plays the same seeded sample of that type's training tasks
// (common random numbers: one episode seed per task, shared by all templates) through
// episode.Play on exec, and one template per task type is frozen: the cheapest of those within a
// standard error of the best mean reward (choose). Training tasks are grouped by task type.
// With Finalists, the best few of each task type are played again on a larger sample and the
// winner is chosen there; Scores then hold both stages. A task type of o.TaskTypes without
// training tasks gets no workflow: Unsearched says so (NoTrainingTasks).
func Search(ctx context.Context, cfg *config.Config, exec executor.Executor, train []tasks.Task, o SearchOptions) (*SearchResult, error) {
	res, err := search(ctx, cfg, exec, train, o)
	if err != nil {
		return nil, err
	}
	for _, tt := range o.TaskTypes {
		if _, ok := res.Workflows[tt]; !ok {
			if res.Unsearched == nil {
				res.Unsearched = map[string]string{}
			}
			res.Unsearched[tt] = NoTrainingTasks(tt)
		}
	}
	return res, nil
}

func search(ctx context.Context, cfg *config.Config, exec executor.Executor, train []tasks.Task, o SearchOptions) (*SearchResult, error) {
	first, err := searchStage(ctx, cfg, exec, train, o)
	if err != nil || o.Finalists < 1 {
		return first, err
	}
	templates := o.Templates
	if templates == nil {
		templates = Grammar()
	}
	byName := map[string]Template{}
	for _, t := range templates {
		byName[t.Name] = t
	}
	final := &SearchResult{Workflows: Workflows{}, Scores: first.Scores}
	for _, tt := range slices.Sorted(maps.Keys(first.Workflows)) {
		var scores []Score
		for _, s := range first.Scores {
			if s.TaskType == tt {
				scores = append(scores, s)
			}
		}
		// Best first; ties keep the grammar's order (SortStableFunc on the scores' order).
		slices.SortStableFunc(scores, func(a, b Score) int {
			return cmp.Or(cmp.Compare(b.Mean, a.Mean), cmp.Compare(a.Tokens, b.Tokens))
		})
		var finalists []Template
		for _, s := range scores[:min(o.Finalists, len(scores))] {
			finalists = append(finalists, byName[s.Template])
		}
		var typed []tasks.Task
		for _, t := range train {
			if cmp.Or(t.TaskType, t.Family) == tt {
				typed = append(typed, t)
			}
		}
		fo := o
		fo.Templates, fo.PerFamily, fo.Finalists = finalists, max(o.FinalPerFamily, o.PerFamily), 0
		r, err := searchStage(ctx, cfg, exec, typed, fo)
		if err != nil {
			return nil, err
		}
		final.Workflows[tt] = r.Workflows[tt]
		final.Scores = append(final.Scores, r.Scores...)
	}
	return final, nil
}

// searchStage plays every template of o on o.PerFamily tasks per task type and keeps the best.
func searchStage(ctx context.Context, cfg *config.Config, exec executor.Executor, train []tasks.Task, o SearchOptions) (*SearchResult, error) {
	templates := o.Templates
	if templates == nil {
		templates = Grammar()
	}
	if len(templates) == 0 || o.PerFamily < 1 || len(train) == 0 {
		return nil, fmt.Errorf("workflow search: %d templates, %d tasks per family, %d training tasks", len(templates), o.PerFamily, len(train))
	}
	if err := uniqueNames(templates); err != nil {
		return nil, err
	}
	byType := map[string][]tasks.Task{}
	for _, t := range train {
		tt := cmp.Or(t.TaskType, t.Family)
		byType[tt] = append(byType[tt], t)
	}
	types := slices.Sorted(maps.Keys(byType))
	type cell struct{ taskType, template int }
	var jobs []episode.Job
	var cells []cell
	for ti, tt := range types {
		sample := sampleTasks(byType[tt], o.PerFamily, seed.Derive(o.Seed, "workflow-search/sample", tt))
		roles := orchestra.RolesFor(sample[0].Family, sample[0].TaskType)
		for pi, p := range templates {
			if p.Validate(roles) != nil {
				continue // the task type does not offer its roles
			}
			for _, task := range sample {
				jobs = append(jobs, episode.Job{Task: task, ID: fmt.Sprintf("search/%s/%s/%s", tt, p.Name, task.ID),
					Source: SearchedWorkflow, Seed: seed.Derive(o.Seed, "workflow-search/episode", task.ID), Script: ForTemplate(p)})
				cells = append(cells, cell{ti, pi})
			}
		}
	}
	played, err := episode.Play(ctx, cfg, exec, nil, nil, jobs, o.Progress)
	if err != nil {
		return nil, fmt.Errorf("workflow search: %w", err)
	}
	scores := map[cell]*Score{}
	for i, p := range played {
		c := cells[i]
		s := scores[c]
		if s == nil {
			s = &Score{TaskType: types[c.taskType], Template: templates[c.template].Name}
			scores[c] = s
		}
		ep := p.Episode
		s.Episodes++
		if ep.Healthy && ep.Stopped {
			s.Mean += ep.Reward
		} else {
			s.Unhealthy++
		}
		s.Tokens += float64(ep.TokensIn + ep.TokensOut)
	}
	res := &SearchResult{Workflows: Workflows{}}
	for ti, tt := range types {
		var typed []Score
		var index []int
		for pi := range templates {
			s := scores[cell{ti, pi}]
			if s == nil {
				continue
			}
			s.Mean /= float64(s.Episodes)
			s.Tokens /= float64(s.Episodes)
			typed, index = append(typed, *s), append(index, pi)
		}
		if len(typed) == 0 {
			return nil, fmt.Errorf("workflow search: no template is playable in task type %q", tt)
		}
		res.Scores = append(res.Scores, typed...)
		res.Workflows[tt] = templates[index[choose(typed)]]
	}
	return res, nil
}

// choose returns the index of the searched template among one task type's scores: the cheapest
// (fewest tokens, then the first) of those whose mean reward lies within one standard error of
// the best mean, √(p(1−p)/n), which bounds it for rewards in [0, 1]. Templates that close are a
// tie the sample cannot break: an argmax among them flips with the search seed or a small change
// of the world, while the workflows it picks between can differ by many points on a benchmark
// that inherits them. The cheapest of them is a stable choice, and one a designer would make.
func choose(scores []Score) int {
	best := 0
	for i, s := range scores {
		if s.Mean > scores[best].Mean {
			best = i
		}
	}
	b := scores[best]
	se := math.Sqrt(b.Mean * (1 - b.Mean) / float64(max(b.Episodes, 1)))
	pick := best
	for i, s := range scores {
		if s.Mean >= b.Mean-se && s.Tokens < scores[pick].Tokens {
			pick = i
		}
	}
	return pick
}

// sampleTasks is a seeded sample of n tasks (all when fewer), in id order.
func sampleTasks(ts []tasks.Task, n int, s uint64) []tasks.Task {
	out := slices.Clone(ts)
	slices.SortFunc(out, func(a, b tasks.Task) int { return cmp.Compare(a.ID, b.ID) })
	r := rand.New(rand.NewPCG(s, s>>1|1))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	out = out[:min(n, len(out))]
	slices.SortFunc(out, func(a, b tasks.Task) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// uniqueNames checks that every template has its own name (the scores and episode ids use it).
func uniqueNames(ts []Template) error {
	seen := map[string]bool{}
	for i, t := range ts {
		if t.Name == "" || seen[t.Name] {
			return fmt.Errorf("workflow search: template %d has an empty or repeated name %q", i, t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}
