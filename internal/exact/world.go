package exact

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/seed"
)

// The second decision's actions (after an agent was added).
const (
	secondStop = iota
	secondVerify
	secondRerun
	seconds
)

// World is the enumerable world: Families × TasksPerFamily tasks and Roles roles.
//
// A history is (first, second): first = −1 when the episode stopped at once (reward 0), else the
// role added; second one of secondStop, secondVerify, secondRerun. A history's success
// probability is p = sigmoid(competence[family][role] + effect[family][second] + offset[task]):
// structured, since each family has its own best role and its own best repair. In the
// deterministic world the reward is 1 when a seeded uniform draw per (task, history) falls below p,
// else 0, the same in every episode. In the noisy world (RewardNoise) every episode draws its own
// binary reward with probability p, as an executor's outcome is drawn in a real run; the decisions
// are still deterministic, so the noise is in the reward alone.
type World struct {
	Families, TasksPerFamily, Roles int
	// RewardNoise: each episode draws its reward from the history's success probability.
	RewardNoise bool
	competence  [][]float64 // [family][role]
	effect      [][]float64 // [family][second]
	offset      []float64   // [task]
	// success is the probability that history i of task q is rewarded: 0 or 1 in the deterministic
	// world, p in the noisy one. [task][history index]
	success [][]float64
	// served is ρ's log-probabilities per task and state (in World.index order) when a served
	// model is the reference (WithServedReference); nil for the built-in prior, referencePrior.
	served [][][]float32
}

// Histories is the number of terminal histories of a task: stop at once, or a role and one of
// three second actions.
func (w *World) Histories() int { return 1 + w.Roles*seconds }

// Tasks is the number of tasks.
func (w *World) Tasks() int { return w.Families * w.TasksPerFamily }

// history is one terminal history; its index is 0 for (−1, ·) and 1 + role·3 + second otherwise.
type history struct{ first, second int }

func (w *World) history(i int) history {
	if i == 0 {
		return history{-1, secondStop}
	}
	return history{(i - 1) / seconds, (i - 1) % seconds}
}

// NewWorld builds the world of the given sizes from a seed. Families cycle through three
// patterns: the best role is role 1 + f mod (Roles−1), and verifying helps in one family of
// three, rerunning in another, neither in the third. rewardNoise makes the noisy world.
func NewWorld(families, tasksPerFamily, roles int, runSeed uint64, rewardNoise bool) (*World, error) {
	if families < 1 || tasksPerFamily < 1 || roles < 2 || roles > policy.ActionWidth-4 {
		return nil, fmt.Errorf("exact world: bad sizes: %d families, %d tasks per family, %d roles (2 to %d)", families, tasksPerFamily, roles, policy.ActionWidth-4)
	}
	w := &World{Families: families, TasksPerFamily: tasksPerFamily, Roles: roles, RewardNoise: rewardNoise}
	for f := range families {
		c := make([]float64, roles)
		for r := range c {
			c[r] = -1
		}
		c[0] = 0.3 // the reference's favourite is a fair choice everywhere
		c[1+f%(roles-1)] = 1.5
		e := []float64{0, -0.3, -0.3}
		switch f % 3 {
		case 0:
			e[secondVerify] = 0.8
		case 1:
			e[secondRerun] = 0.8
		}
		w.competence, w.effect = append(w.competence, c), append(w.effect, e)
	}
	for q := range w.Tasks() {
		w.offset = append(w.offset, 2*uniform(runSeed, "offset", q, 0)-1)
		f := q / tasksPerFamily
		rs := make([]float64, w.Histories())
		for i := 1; i < len(rs); i++ {
			h := w.history(i)
			p := 1 / (1 + math.Exp(-(w.competence[f][h.first] + w.effect[f][h.second] + w.offset[q])))
			switch {
			case rewardNoise:
				rs[i] = p
			case uniform(runSeed, "reward", q, i) < p:
				rs[i] = 1
			}
		}
		w.success = append(w.success, rs)
	}
	return w, nil
}

// uniform is a deterministic draw in [0, 1) for (what, a, b).
func uniform(runSeed uint64, what string, a, b int) float64 {
	x := seed.Derive(runSeed, "exact", what, fmt.Sprint(a), fmt.Sprint(b))
	return rand.New(rand.NewPCG(x, x^0x756e69666f726d)).Float64()
}

// Reward is the expected reward of history i of task q (its reward, in the deterministic world).
func (w *World) Reward(q, i int) float64 { return w.success[q][i] }

// draw is the reward of one episode that ended in history i of task q.
func (w *World) draw(q, i int, rng *rand.Rand) float64 {
	if !w.RewardNoise {
		return w.success[q][i]
	}
	if rng.Float64() < w.success[q][i] {
		return 1
	}
	return 0
}

// TaskID names task q.
func (w *World) TaskID(q int) string { return fmt.Sprintf("exact-f%d-q%03d", q/w.TasksPerFamily, q) }

// stateKind is where a decision is taken: the empty team, after an agent was added, after a
// second action (where STOP is forced).
const (
	atStart = iota
	afterAgent
	afterSecond
)

// state is a decision point of task q: the kind and the history so far.
type state struct {
	task, kind, role, second int
}

// legal lists the state's legal actions as action indices: at the start STOP and ADD(role) for
// every role (0 = STOP, 1 + role); after an agent STOP, VERIFY, RERUN (second actions); then STOP.
func (w *World) legal(s state) int {
	switch s.kind {
	case atStart:
		return 1 + w.Roles
	case afterAgent:
		return seconds
	}
	return 1
}

// StateWidth is the width of the network's state vector: task one-hot, family one-hot, the
// decision's kind one-hot, the role added and the second action one-hot.
func (w *World) StateWidth() int { return w.Tasks() + w.Families + 3 + w.Roles + 2 }

// row is the network's input at state s: the state vector, one descriptor per legal action
// (kind one-hot STOP, ADD, VERIFY, RERUN, then the role one-hot) and the reference prior's logits.
func (w *World) row(s state) gpu.PolicyRow {
	st := make([]float32, w.StateWidth())
	st[s.task] = 1
	o := w.Tasks()
	st[o+s.task/w.TasksPerFamily] = 1
	o += w.Families
	st[o+s.kind] = 1
	o += 3
	if s.kind != atStart {
		st[o+s.role] = 1
	}
	o += w.Roles
	if s.kind == afterSecond {
		st[o+s.second-1] = 1
	}
	n := w.legal(s)
	acts := make([]float32, n*policy.ActionWidth)
	prior := make([]float32, n)
	for a := range n {
		d := acts[a*policy.ActionWidth : (a+1)*policy.ActionWidth]
		switch {
		case s.kind == atStart && a == 0, s.kind != atStart && a == secondStop:
			d[0] = 1
		case s.kind == atStart:
			d[1], d[4+a-1] = 1, 1
		default:
			d[1+a] = 1
		}
		prior[a] = w.prior(s, a)
	}
	return gpu.PolicyRow{State: st, Actions: acts, Prior: prior}
}

// prior is ρ's logit of action a at state s: the served reference's log-probability when there is
// one, else referencePrior.
func (w *World) prior(s state, a int) float32 {
	if w.served != nil {
		return w.served[s.task][w.index(s)][a]
	}
	return referencePrior(s.kind, a)
}

// referencePrior is ρ's logit: at the start it prefers role 0 and rarely stops; after an agent
// it prefers to stop, then to verify.
func referencePrior(kind, a int) float32 {
	switch {
	case kind == atStart && a == 0:
		return -2
	case kind == atStart && a == 1:
		return 1
	case kind == atStart:
		return 0
	case kind == afterAgent && a == secondStop:
		return 1
	case kind == afterAgent && a == secondVerify:
		return 0
	case kind == afterAgent:
		return -0.5
	}
	return 0
}

// features is f(s): the decision's depth and what the team holds, in the first of the 30 slots.
func (w *World) features(s state) [gpu.FeatureWidth]float32 {
	var f [gpu.FeatureWidth]float32
	f[0] = float32(s.kind) / 2
	if s.kind != atStart && 1+s.role < gpu.FeatureWidth-2 {
		f[1+s.role] = 1
	}
	if s.kind == afterSecond {
		f[gpu.FeatureWidth-2+s.second-1] = 1
	}
	return f
}

// states lists every decision point of task q, in a fixed order: the start, then per role the
// state after it, then the two forced states after its repairs.
func (w *World) states(q int) []state {
	out := []state{{task: q, kind: atStart}}
	for r := range w.Roles {
		out = append(out, state{task: q, kind: afterAgent, role: r})
		out = append(out, state{task: q, kind: afterSecond, role: r, second: secondVerify},
			state{task: q, kind: afterSecond, role: r, second: secondRerun})
	}
	return out
}

// path lists the decisions of history i as (state, action) pairs.
func (w *World) path(q, i int) ([]state, []int) {
	h := w.history(i)
	if h.first < 0 {
		return []state{{task: q, kind: atStart}}, []int{0}
	}
	ss := []state{{task: q, kind: atStart}, {task: q, kind: afterAgent, role: h.first}}
	as := []int{1 + h.first, h.second}
	if h.second != secondStop {
		ss, as = append(ss, state{task: q, kind: afterSecond, role: h.first, second: h.second}), append(as, 0)
	}
	return ss, as
}
