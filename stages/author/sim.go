package author

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/skills"
)

// simAuthor is the simulated author of the embedded world: it writes a candidate from
// templates for the family's task type, a pure function of the window seed, i.e. of (run
// seed, step, family). It reads no evidence: in the simulated world a skill's worth is its
// hidden effect, which internal/sim draws from the skill id with the prior of the sim: keys
// skill_helpful_prob, skill_harmful_prob and their effects (helpful, neutral, harmful). It
// picks a name no skill of the family has, so its output always passes the filters.
type simAuthor struct{}

func newSimAuthor(*config.Config) *simAuthor { return &simAuthor{} }

func (*simAuthor) Backend() string { return "sim" }

// Propose draws: a name (adjective + focus) unused in the family, a description, a trigger,
// 2–4 plan steps, 1–2 pitfalls and one constraint, steps in template order.
func (*simAuthor) Propose(_ context.Context, w Window) (Proposal, error) {
	rng := rand.New(rand.NewPCG(w.Seed, 0x5eed))
	tpl, ok := templates[w.TaskType]
	if !ok {
		tpl = templates[""]
	}
	used := map[string]bool{}
	for _, s := range w.Library {
		used[strings.ToLower(s.Record.Name)] = true
	}
	var names []string
	for _, a := range adjectives {
		for _, f := range tpl.focus {
			if n := a + " " + f; !used[strings.ToLower(n)] {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return Proposal{}, nil // every name is taken: no proposal
	}
	name := names[rng.IntN(len(names))]
	plan := pick(rng, append(slices.Clone(tpl.steps), generic.steps...), 2+rng.IntN(3))
	pitfalls := pick(rng, append(slices.Clone(tpl.pitfalls), generic.pitfalls...), 1+rng.IntN(2))
	constraint := pick(rng, generic.constraints, 1)
	rec := skills.Record{
		Name:        name,
		Description: tpl.descriptions[rng.IntN(len(tpl.descriptions))],
		Trigger:     tpl.triggers[rng.IntN(len(tpl.triggers))],
		Plan:        plan, Pitfalls: pitfalls, Constraint: constraint,
	}
	return Proposal{Record: &rec}, nil
}

// pick draws n distinct items, returned in pool order.
func pick(rng *rand.Rand, pool []string, n int) []string {
	idx := rng.Perm(len(pool))[:min(n, len(pool))]
	slices.Sort(idx)
	out := make([]string, len(idx))
	for i, k := range idx {
		out[i] = pool[k]
	}
	return out
}

type template struct {
	focus, descriptions, triggers, steps, pitfalls, constraints []string
}

var adjectives = []string{"Careful", "Two-pass", "Explicit", "Grounded", "Stepwise"}

// generic items go with every task type.
var generic = template{
	steps: []string{
		"Restate exactly what the task asks for in one line.",
		"Compare the final answer against the task's constraints before stating it.",
		"If inputs from other agents disagree, name the point of disagreement first.",
	},
	pitfalls: []string{
		"Answering a different question than the one asked.",
		"Stopping before the final answer is stated plainly.",
	},
	constraints: []string{
		"End with one line that states the final answer.",
		"Keep the reasoning under 200 words.",
		"Do not repeat the task text.",
	},
}

// templates by task type ("" is the fallback for other families).
var templates = map[string]template{
	"hotpotqa": {
		focus:        []string{"bridge tracing", "passage linking", "entity check"},
		descriptions: []string{"Resolve multi-hop questions by linking facts across passages.", "Find the bridge entity before answering a two-hop question."},
		triggers:     []string{"Use when a question needs facts from two passages.", "Use when the answer depends on an intermediate entity."},
		steps:        []string{"Identify the bridge entity the question hinges on.", "Quote the sentence that links the two passages.", "Answer with the shortest span that satisfies both hops."},
		pitfalls:     []string{"Answering with the bridge entity instead of the asked one."},
	},
	"nq_open": {
		focus:        []string{"fact recall", "span answer", "date check"},
		descriptions: []string{"Answer open factual questions with a short exact span.", "Recall the fact and strip everything but the answer span."},
		triggers:     []string{"Use when a factual question expects a short answer.", "Use when the question asks who, when or where."},
		steps:        []string{"Decide which entity type the answer must have.", "Recall the fact and check it against the entity type.", "Reduce the answer to the shortest complete span."},
		pitfalls:     []string{"Adding qualifiers that change the span."},
	},
	"medqa": {
		focus:        []string{"option elimination", "finding match", "distractor check"},
		descriptions: []string{"Choose among lettered options by eliminating the ones the findings contradict.", "Match the key clinical finding to exactly one option."},
		triggers:     []string{"Use when a question offers lettered options.", "Use when two options look plausible."},
		steps:        []string{"List the decisive findings in the question.", "Strike every option a finding contradicts.", "State the remaining option as a single letter."},
		pitfalls:     []string{"Picking the most familiar option rather than the supported one."},
	},
	"aime_2026": {
		focus:        []string{"invariant search", "case split", "answer range"},
		descriptions: []string{"Solve competition problems by finding an invariant before computing.", "Split the problem into exhaustive cases and check each."},
		triggers:     []string{"Use when a math problem asks for one integer.", "Use when brute force looks too long."},
		steps:        []string{"Write down what quantity the answer is.", "Look for an invariant or symmetry that shrinks the search.", "Check the answer lies in the required integer range."},
		pitfalls:     []string{"Arithmetic slips in the last step."},
	},
	"mbpp_plus": {
		focus:        []string{"edge cases", "signature check", "test first"},
		descriptions: []string{"Write the function after listing its edge cases.", "Match the required signature and return type exactly."},
		triggers:     []string{"Use when a task asks for a python function.", "Use when a visible test is given."},
		steps:        []string{"Copy the required function name and arguments exactly.", "List empty, single and large inputs as edge cases.", "Run the visible test mentally before answering."},
		pitfalls:     []string{"Passing the visible test while failing hidden edge cases."},
	},
	"alfworld": {
		focus:        []string{"goal tracking", "location memory", "object search"},
		descriptions: []string{"Keep track of the goal objects and where they have been seen.", "Search receptacles systematically instead of revisiting them."},
		triggers:     []string{"Use when a household task needs an object found and placed.", "Use when the same location was visited twice."},
		steps:        []string{"Name the object and the target receptacle.", "Visit each unvisited receptacle in turn.", "Take the object and go straight to the target."},
		pitfalls:     []string{"Looping between the same two locations."},
	},
	"": {
		focus:        []string{"task check", "answer check", "final review"},
		descriptions: []string{"Check the answer against the task before stating it.", "Review the final answer once before stopping."},
		triggers:     []string{"Use when the task has one expected answer.", "Use when earlier agents disagree."},
		steps:        []string{"Write down the expected form of the answer."},
		pitfalls:     []string{"Leaving the answer implicit."},
	},
}
