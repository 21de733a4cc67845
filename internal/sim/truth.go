package sim

import (
	"gonum.org/v1/gonum/stat/distuv"
	"math"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// TaskTruth is the hidden side of one task: what the world knows and the orchestrator never
// sees. It is a pure function of (run seed, task id, family) and the world's parameters, plus
// the task's gold answer when the record carries one, so it can be regenerated anywhere (a
// sim_truth table, a test scoring admission decisions) without storing it.
type TaskTruth struct {
	TaskID   string `json:"task_id"`
	Family   string `json:"family"`
	TaskType string `json:"task_type"`
	OOD      bool   `json:"ood"`

	// Difficulty d in [0, 1]: lowers every agent's logit by kappa*d, raises p_fail, lowers the
	// search hit rate, and (interactive families) raises the requirement.
	Difficulty float64 `json:"difficulty"`
	// Answer is the correct answer as a grader reads it: an entity (QA), a letter (MC), an
	// integer (math) or the correct program (code); empty for interactive families.
	Answer string `json:"answer"`
	// Distractors are the wrong answers, most plausible first: distractor k (1-based) is drawn
	// with probability proportional to k^-distractor_exponent.
	Distractors []string `json:"distractors"`
	// SurfacePass[k-1] tells whether distractor k passes surface checks: a python run of it exits
	// cleanly (and, for code, passes the visible test). The correct answer always passes.
	SurfacePass []bool `json:"surface_pass"`
	// TrapRate is the family's rate of wrong answers that pass surface checks.
	TrapRate float64 `json:"trap_rate"`
	// FailRate is p_fail = fail_base + fail_slope*d for every execution on the task.
	FailRate float64 `json:"fail_rate"`
	// SearchHitRate is P(a search returns the correct answer) = search_hit_rate - slope*d.
	SearchHitRate float64 `json:"search_hit_rate"`
	// Unsolvable tasks (a share families.F.unsolvable_share) are out of every agent's reach: no
	// fresh answer is correct, no search finds the answer, and an interactive goal needs more
	// progress than env_max_steps allows.
	Unsolvable bool `json:"unsolvable"`
	// Requirement is the number of progress units an interactive task needs (0 otherwise).
	Requirement int `json:"requirement"`
	// Function and VisibleTest describe code tasks: the entry function and the one test shown.
	Function    string `json:"function,omitempty"`
	VisibleTest string `json:"visible_test,omitempty"`

	kind     kind
	template int // code template index
}

// TaskTruth regenerates the hidden truth of a task from (run seed, task id). The family comes
// from Task.Family, or from the id's prefix when the record has none. A task of a family the
// world does not know gets a zero TaskTruth with only TaskID set.
func (w *World) TaskTruth(t tasks.Task) TaskTruth {
	fam := t.Family
	if fam == "" {
		fam, _, _ = strings.Cut(t.ID, "/")
	}
	info, ok := familyTable[fam]
	if !ok {
		return TaskTruth{TaskID: t.ID}
	}
	return buildTruth(w.p, w.runSeed, t.ID, info, t.Answers)
}

func buildTruth(p config.Sim, runSeed uint64, id string, info familyInfo, gold []string) TaskTruth {
	fp, _ := p.Families.ByBenchmark(info.name)
	r := stream(runSeed, "sim/task", id)
	tr := TaskTruth{TaskID: id, Family: info.name, TaskType: info.taskType, OOD: info.ood, kind: info.kind}

	// The inverse CDF of one uniform from a stream of its own: a change of the Beta shape moves
	// every task's difficulty smoothly and leaves its other draws alone (common random numbers).
	u := stream(runSeed, "sim/difficulty", id).Float64()
	d := distuv.Beta{Alpha: fp.DifficultyA, Beta: fp.DifficultyB}.Quantile(u)
	if info.ood {
		d = p.OODDifficultyShift + (1-p.OODDifficultyShift)*d
	}
	tr.Difficulty = d
	// A stream of its own, so that the share moves no other draw (common random numbers).
	tr.Unsolvable = stream(runSeed, "sim/solvable", id).Float64() < fp.UnsolvableShare
	tr.FailRate = math.Min(1, p.FailBase+p.FailSlope*d)
	tr.SearchHitRate = math.Max(0, math.Min(1, p.SearchHitRate-p.SearchHitSlope*d))
	if tr.Unsolvable {
		tr.SearchHitRate = 0
	}
	tr.TrapRate = fp.TrapRate

	m := fp.Distractors
	switch info.kind {
	case kindQA, kindQAPassages:
		nm := newNamer(r)
		style := r.IntN(4)
		cands := make([]string, m+1)
		for i := range cands {
			cands[i] = nm.entity(style)
		}
		if len(gold) > 0 && strings.TrimSpace(gold[0]) != "" && normalizeQA(gold[0]) != normalizeQA(cands[0]) {
			g := normalizeQA(gold[0])
			cands[0] = gold[0]
			for i := 1; i < len(cands); i++ {
				for normalizeQA(cands[i]) == g || containsWord(g, normalizeQA(cands[i])) || containsWord(normalizeQA(cands[i]), g) {
					cands[i] = nm.entity(style)
				}
			}
		}
		tr.Answer, tr.Distractors = cands[0], cands[1:]
	case kindMC:
		letters := []string{"A", "B", "C", "D"}
		r.Shuffle(len(letters), func(i, j int) { letters[i], letters[j] = letters[j], letters[i] })
		correct := letters[0]
		if len(gold) > 0 {
			if g := strings.ToUpper(strings.TrimSpace(gold[0])); len(g) == 1 && g >= "A" && g <= "D" {
				correct = g
			}
		}
		tr.Answer = correct
		for _, l := range letters {
			if l != correct && len(tr.Distractors) < m {
				tr.Distractors = append(tr.Distractors, l)
			}
		}
	case kindMath:
		used := map[int]bool{}
		correct := r.IntN(1000)
		if len(gold) > 0 {
			if g, err := strconv.Atoi(strings.TrimSpace(gold[0])); err == nil {
				correct = g
			}
		}
		used[correct] = true
		// Plausible mistakes first: off by one, doubled, halved; then arbitrary integers.
		near := []int{correct + 1, correct - 1, 2 * correct, correct / 2}
		r.Shuffle(len(near), func(i, j int) { near[i], near[j] = near[j], near[i] })
		for _, v := range near {
			if len(tr.Distractors) < m && v >= 0 && v < 1000 && !used[v] && r.IntN(2) == 0 {
				used[v] = true
				tr.Distractors = append(tr.Distractors, strconv.Itoa(v))
			}
		}
		for len(tr.Distractors) < m {
			v := r.IntN(1000)
			if !used[v] {
				used[v] = true
				tr.Distractors = append(tr.Distractors, strconv.Itoa(v))
			}
		}
		tr.Answer = strconv.Itoa(correct)
	case kindCode:
		ti := r.IntN(len(codeTemplates))
		tmpl := codeTemplates[ti]
		tr.template = ti
		tr.Function = tmpl.name
		args, want := tmpl.input(r, newNamer(r))
		tr.VisibleTest = "assert " + tmpl.name + "(" + args + ") == " + want
		tr.Answer = tmpl.program(tmpl.ret)
		muts := append([]string{}, codeMutations...)
		r.Shuffle(len(muts), func(i, j int) { muts[i], muts[j] = muts[j], muts[i] })
		for _, mu := range muts[:min(m, len(muts))] {
			tr.Distractors = append(tr.Distractors, tmpl.program(mutate(mu, tmpl.ret)))
		}
	case kindEnv:
		tr.Requirement = p.EnvRequirementBase + int(math.Round(float64(p.EnvRequirementSlope)*d))
		if tr.Unsolvable {
			tr.Requirement = max(tr.Requirement, p.EnvMaxSteps+1)
		}
		tr.TrapRate = 0
		return tr
	}
	tr.SurfacePass = make([]bool, len(tr.Distractors))
	for i := range tr.SurfacePass {
		tr.SurfacePass[i] = r.Float64() < fp.TrapRate
	}
	return tr
}
