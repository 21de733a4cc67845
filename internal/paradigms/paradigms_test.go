package paradigms

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

func defaultConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Rollout.Workers = 4
	return cfg
}

// testTasks draws n tasks of the split per family: the IID families, and for the test split the
// OOD ones too (with their IID task types).
func testTasks(cfg *config.Config, split string, n int) []tasks.Task {
	var out []tasks.Task
	for _, f := range sim.IIDFamilies {
		out = append(out, sim.Tasks(cfg.Sim, cfg.Seed, f, "", split, n)...)
	}
	if split == "test" {
		for _, f := range slices.Sorted(maps.Keys(sim.OODFamilies)) {
			out = append(out, sim.Tasks(cfg.Sim, cfg.Seed, f, sim.OODFamilies[f], split, n)...)
		}
	}
	return out
}

// play plays one episode of every task with pol through the rollout's decision loop.
func play(t *testing.T, cfg *config.Config, name string, pol policy.Policy, ts []tasks.Task) []episode.Played {
	t.Helper()
	jobs := make([]episode.Job, len(ts))
	for i, task := range ts {
		jobs[i] = episode.Job{Task: task, ID: fmt.Sprintf("test/%s/%s", name, task.ID), Source: name,
			Seed: seed.Derive(cfg.Seed, "paradigms-test", task.ID), Script: pol}
	}
	out, err := episode.Play(context.Background(), cfg, sim.New(cfg.Sim, cfg.Seed), nil, nil, jobs, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

// step is one building action of a template: an agent, or an input edge by its ends (last: the
// agent's last input, which goes by a revise edge when the budget can run the agent again).
type step struct {
	action string
	last   bool
}

// plan is the building actions of a template when the budget allows every agent, and the output
// node of the last-agent rule.
func plan(tpl Template) (steps []step, output string) {
	for i, a := range tpl.Agents {
		id := fmt.Sprintf("n%d", i)
		steps = append(steps, step{action: orchestra.Action{Kind: orchestra.KindAddAgent, NodeID: id, RoleID: a.Role}.JSON()})
		for k, in := range a.Inputs {
			e := orchestra.Action{Kind: orchestra.KindAddEdge, SourceID: fmt.Sprintf("n%d", in), TargetID: id, Protocol: orchestra.ProtocolFeedback}
			steps = append(steps, step{action: e.JSON(), last: k == len(a.Inputs)-1})
		}
		if a.Role != "planner" {
			output = id
		}
	}
	return steps, output
}

// checkBuilt checks that the episode's ADD_AGENT and ADD_EDGE actions are a prefix of the plan,
// all of it unless the plan's next agent was not legal when the building stopped (the budget
// could not run it), and that an edge goes by revise exactly when it is its agent's last input
// and revise was legal; it returns how many agents were added.
func checkBuilt(t *testing.T, what string, p episode.Played, plan []step) int {
	t.Helper()
	k, agents := 0, 0
	for _, d := range p.Decisions {
		if d.ActionKind != orchestra.KindAddAgent && d.ActionKind != orchestra.KindAddEdge {
			if k < len(plan) && (!strings.Contains(plan[k].action, orchestra.KindAddAgent) || slices.Contains(d.LegalActions, plan[k].action)) {
				t.Fatalf("%s: %s while %s was next and legal", what, d.ActionJSON, plan[k].action)
			}
			k = len(plan) // the building is over
			continue
		}
		if k >= len(plan) {
			t.Fatalf("%s: %s after the whole plan", what, d.ActionJSON)
		}
		got := d.ActionJSON
		if d.ActionKind == orchestra.KindAddEdge {
			revise := strings.Replace(plan[k].action, orchestra.ProtocolFeedback, orchestra.ProtocolRevise, 1)
			want := plan[k].action
			if plan[k].last && slices.Contains(d.LegalActions, revise) {
				want = revise
			}
			if got != want {
				t.Fatalf("%s: edge %s, want %s", what, got, want)
			}
		} else {
			if got != plan[k].action {
				t.Fatalf("%s: %s, want %s", what, got, plan[k].action)
			}
			agents++
		}
		k++
	}
	return agents
}

// checkEpisode: healthy, stopped by STOP, every action the legal one the policy put all its mass
// on (log-probability 0 where it chose among several).
func checkEpisode(t *testing.T, name string, p episode.Played) {
	t.Helper()
	ep := p.Episode
	if !ep.Healthy || !ep.Stopped {
		t.Fatalf("%s %s: healthy %v stopped %v (%v)", name, ep.TaskID, ep.Healthy, ep.Stopped, ep.UnhealthyReason)
	}
	for _, d := range p.Decisions {
		if d.LegalActions[d.Chosen] != d.ActionJSON {
			t.Fatalf("%s %s decision %d: %s is not legal action %d", name, ep.TaskID, d.T, d.ActionJSON, d.Chosen)
		}
		if !d.Forced && len(d.LegalActions) > 1 && d.LogpBehavior != 0 {
			t.Fatalf("%s %s decision %d: log-probability %v of the chosen action, want 0", name, ep.TaskID, d.T, d.LogpBehavior)
		}
	}
	if last := p.Decisions[len(p.Decisions)-1]; last.ActionKind != orchestra.KindStop {
		t.Fatalf("%s %s: last action %s", name, ep.TaskID, last.ActionJSON)
	}
}

// Each paradigm, on every family (IID and OOD), plays only legal actions, stops healthy, and
// builds exactly the team it names: its agents with their roles in order, each agent's inputs
// (the last by a revise edge), the named output agent, all of it unless the budget cannot run
// the next agent (the controller's prompts are charged too); the interactive families only add
// reruns of the output agent while the environment runs.
func TestParadigmsBuildWhatTheyName(t *testing.T) {
	cfg := defaultConfig(t)
	ts := testTasks(cfg, "test", 3)
	// One template of every shape of the grammar.
	searched := Workflows{}
	for i, tt := range sim.IIDFamilies {
		name := []string{"planner>verifier", "planner>tool_user>verifier", "solver+researcher+tool_user>verifier",
			"3xsolver:majority", "2xresearcher>finalizer", "planner>finalizer"}[i]
		k := slices.IndexFunc(Grammar(), func(t Template) bool { return t.Name == name })
		if k < 0 {
			t.Fatalf("no template %s in the grammar", name)
		}
		searched[tt] = Grammar()[k]
	}
	for _, name := range Baselines {
		pol, err := New(name, searched)
		if err != nil {
			t.Fatal(err)
		}
		var solved float64
		full := 0
		for _, p := range play(t, cfg, name, pol, ts) {
			checkEpisode(t, name, p)
			ep := p.Episode
			roles := orchestra.RolesFor(ep.Family, ep.TaskType)
			w := "solver"
			if slices.ContainsFunc(roles, func(r executor.Role) bool { return r.ID == "tool_user" }) {
				w = "tool_user"
			}
			var tpl Template
			switch name {
			case Direct:
				tpl = Template{Agents: []Agent{{Role: "solver"}}}
			case SingleAgent:
				tpl = Template{Agents: []Agent{{Role: w}}}
			case FixedTemplate:
				tpl = Template{Agents: []Agent{{Role: "planner"}, {Role: "solver", Inputs: []int{0}}, {Role: "verifier", Inputs: []int{1}}}}
			case PlanExecute:
				tpl = Template{Agents: []Agent{{Role: "planner"}, {Role: w, Inputs: []int{0}}, {Role: w, Inputs: []int{0}}, {Role: "finalizer", Inputs: []int{1, 2}}}}
			case SearchedWorkflow:
				tpl = searched[ep.TaskType]
			}
			steps, output := plan(tpl)
			agents := checkBuilt(t, name+" "+ep.TaskID, p, steps)
			if agents == len(tpl.Agents) {
				full++
			}
			if agents == len(tpl.Agents) && tpl.Output != OutputMajority && (ep.OutputNode == nil || *ep.OutputNode != output) {
				t.Fatalf("%s %s: output %v, want %s", name, ep.TaskID, ptrString(ep.OutputNode), output)
			}
			for _, d := range p.Decisions {
				switch d.ActionKind {
				case orchestra.KindDropAgent, orchestra.KindBindSkill:
					t.Fatalf("%s %s: %s", name, ep.TaskID, d.ActionJSON)
				case orchestra.KindRerunAgent:
					if !sim.Interactive(ep.Family) {
						t.Fatalf("%s %s: rerun outside an interactive family: %s", name, ep.TaskID, d.ActionJSON)
					}
				}
			}
			solved += ep.Reward
		}
		t.Logf("%s: solved %.0f of %d, %d whole teams", name, solved, len(ts), full)
		if full == 0 {
			t.Errorf("%s: no episode built the whole team under the default budget", name)
		}
	}
}

// Under a budget too small for the teams, every paradigm still picks only legal actions, builds a
// prefix of its plan, stops building where the budget cannot run the next agent, and stops
// healthy.
func TestParadigmsUnderTightBudget(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Budget.Tokens = 48000 // one envelope of 32,768 tokens at a time, and little more
	ts := testTasks(cfg, "train", 3)
	tpl := Template{Name: "3xsolver>verifier", Agents: []Agent{{Role: "solver"}, {Role: "solver"}, {Role: "solver"}, {Role: "verifier", Inputs: []int{0, 1, 2}}}, Output: OutputLast}
	searched := Workflows{}
	for _, tt := range sim.IIDFamilies {
		searched[tt] = tpl
	}
	pol, err := New(SearchedWorkflow, searched)
	if err != nil {
		t.Fatal(err)
	}
	steps, _ := plan(tpl)
	short := 0
	for _, p := range play(t, cfg, SearchedWorkflow, pol, ts) {
		checkEpisode(t, SearchedWorkflow, p)
		if checkBuilt(t, p.Episode.TaskID, p, steps) < len(tpl.Agents) {
			short++
		}
	}
	if short == 0 {
		t.Error("the budget cut no team short: the test does not exercise it")
	}
	for _, name := range Names[:3] {
		pol, err := New(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range play(t, cfg, name, pol, ts) {
			checkEpisode(t, name, p)
		}
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := New("react", nil); err == nil || !strings.Contains(err.Error(), "unknown paradigm") {
		t.Fatalf("unknown name: %v", err)
	}
	if _, err := New(SearchedWorkflow, nil); err == nil || !strings.Contains(err.Error(), "search") {
		t.Fatalf("searched without workflows: %v", err)
	}
	// A searched workflow without the episode's task type is an error of the pipeline.
	cfg := defaultConfig(t)
	pol, err := New(SearchedWorkflow, Workflows{"hotpotqa": Grammar()[0]})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []episode.Job{{Task: sim.Tasks(cfg.Sim, cfg.Seed, "medqa", "", "test", 1)[0], ID: "x", Source: "x", Seed: 1, Script: pol}}
	if _, err := episode.Play(context.Background(), cfg, sim.New(cfg.Sim, cfg.Seed), nil, nil, jobs, nil); err == nil || !strings.Contains(err.Error(), "medqa") {
		t.Fatalf("missing task type: %v", err)
	}
}

func TestTemplateValidate(t *testing.T) {
	roles := orchestra.RolesFor("alfworld", "")
	for _, c := range []struct {
		tpl  Template
		want string
	}{
		{Template{Name: "empty", Output: OutputLast}, "no agents"},
		{Template{Name: "rule", Agents: []Agent{{Role: "solver"}}, Output: "best"}, "output rule"},
		{Template{Name: "tools", Agents: []Agent{{Role: "tool_user"}}, Output: OutputLast}, "not offered"},
		{Template{Name: "forward", Agents: []Agent{{Role: "solver", Inputs: []int{0}}}, Output: OutputLast}, "earlier"},
		{Template{Name: "twice", Agents: []Agent{{Role: "solver"}, {Role: "verifier", Inputs: []int{0, 0}}}, Output: OutputLast}, "distinct"},
		{Template{Name: "plan only", Agents: []Agent{{Role: "planner"}}, Output: OutputLast}, "output role"},
	} {
		if err := c.tpl.Validate(roles); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.tpl.Name, err, c.want)
		}
	}
}

func ptrString(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}

// A fixed paradigm's decisions are no controller model's calls, so the budget pays only for its
// executions; plan_execute pays for one call, the first decision, where its planner writes the
// graph. Feature 26 × the token cap is the tokens settled before a decision: at the last decision
// (STOP) a fixed template has settled exactly its executions' tokens, and plan_execute those and
// its first decision's charge (settled at decision 1 less the executions of decision 0).
func TestParadigmsPayOnlyForTheirExecutionsAndPlansCall(t *testing.T) {
	cfg := defaultConfig(t)
	ts := sim.Tasks(cfg.Sim, cfg.Seed, "musique", "hotpotqa", "test", 4) // long prompts: a controller call is dear
	settled := func(p episode.Played, at int) float64 {
		return float64(p.Decisions[at].Features[26]) * float64(cfg.Budget.Tokens)
	}
	executed := func(p episode.Played, before int32) (n float64) {
		for _, x := range p.Executions {
			if x.T < before {
				n += float64(x.TokensIn + x.TokensOut)
			}
		}
		return n
	}
	for _, name := range []string{FixedTemplate, PlanExecute} {
		pol, err := New(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range play(t, cfg, name, pol, ts) {
			last := len(p.Decisions) - 1
			paid := settled(p, last) - executed(p, p.Decisions[last].T)
			first := settled(p, 1) - executed(p, 1)
			switch name {
			case FixedTemplate:
				if math.Abs(paid) > 0.5 {
					t.Errorf("%s %s: %.1f tokens settled beyond its executions'", name, p.Episode.EpisodeID, paid)
				}
			case PlanExecute:
				if first < 100 || math.Abs(paid-first) > 0.5 {
					t.Errorf("%s %s: the first decision cost %.1f tokens and all decisions %.1f: want one controller call", name, p.Episode.EpisodeID, first, paid)
				}
			}
		}
	}
}
