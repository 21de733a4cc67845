package episode

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/internal/textrules"
)

// calibrationPerFamily is the number of seeded train tasks per IID family of the full
// calibration; each arm plays one episode per task, so each arm plays 6 x 340 = 2,040 episodes.
const calibrationPerFamily = 340

// TestCalibration plays episodes through env.run, the rollout stage's own decision loop
// (controller charging, budget finalisation, decision seeds), on the simulated world with the
// default configuration, and checks the calibration targets of the reference prior:
//
//	(a) at most one episode in twenty of either arm is unhealthy (the levels are the fitted world's, checked
//	    against its fit report by internal/calibrate);
//	(b) a scripted strong team (three solvers, a verifier receiving all three, output the
//	    majority answer) plays beside it (both levels logged);
//	(c) answer agreement (feature 17) and verifier flags carry signal about correctness.
//
// Both arms share each task's episode seed (common random numbers). It plays 4,080 episodes
// (about 45 s on 2 cores); -short skips it.
func TestCalibration(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the full calibration plays 4,080 episodes")
	}
	start := time.Now()
	ref, team := calibrate(t, calibrationPerFamily)

	var refSum, teamSum float64
	for _, fam := range sim.IIDFamilies {
		r, s := ref.fam[fam], team.fam[fam]
		refSum += r.rate()
		teamSum += s.rate()
	}
	n := float64(len(sim.IIDFamilies))
	// Levels are the fitted world's (ρ verifies once an answer stands, as the paper's untrained
	// architecture scores at the level of the searched workflow): logged, and checked against
	// the fit report by internal/calibrate.
	t.Logf("average: reference prior %.3f  strong team %.3f  (%+.3f)", refSum/n, teamSum/n, (teamSum-refSum)/n)
	for _, r := range []*armResult{ref, team} {
		if bad := r.unhealthyTotal(); bad > r.episodes/20 {
			t.Errorf("%s: %d of %d episodes unhealthy", r.name, bad, r.episodes)
		}
	}
	// (c) Signals. Answer agreement (feature 17 of the terminal state) against the reward, over
	// episodes whose team states at least two answers; a verifier's flag against the
	// correctness of the majority input it checked.
	if ra := calPearson(team.agree, team.agreeReward); ra <= 0.1 {
		t.Errorf("strong team: answer agreement and reward correlate at r=%.3f, want > 0.1", ra)
	}
	if rf := calPearson(team.flag, team.inputWrong); rf <= 0.2 {
		t.Errorf("strong team: verifier flags and wrong inputs correlate at r=%.3f, want > 0.2", rf)
	}
	t.Logf("wall time %v for %d episodes", time.Since(start).Round(time.Millisecond), ref.episodes+team.episodes)
}

// TestCalibrationHarness runs the calibration harness on a few tasks per family in the default
// suite: every episode of both arms is healthy and stops, the strong team builds its whole
// team where the budget allows, and the reference prior builds small teams.
func TestCalibrationHarness(t *testing.T) {
	ref, team := calibrate(t, 6)
	for _, r := range []*armResult{ref, team} {
		if bad := r.unhealthyTotal(); bad > 0 {
			t.Errorf("%s: %d of %d episodes unhealthy: %v", r.name, bad, r.episodes, r.reasons)
		}
		if r.kinds[orchestra.KindStop] != r.episodes {
			t.Errorf("%s: %d STOPs in %d episodes", r.name, r.kinds[orchestra.KindStop], r.episodes)
		}
	}
	if team.fullTeams < team.episodes/2 {
		t.Errorf("strong team: %d of %d episodes ran the verifier over three solvers", team.fullTeams, team.episodes)
	}
	if len(team.flag) == 0 {
		t.Error("strong team: no verifier checked an input answer")
	}
	var nodes, k float64
	for _, f := range ref.fam {
		nodes += f.nodes
		k += float64(f.n)
	}
	if nodes/k > 2.5 {
		t.Errorf("reference prior: %.2f nodes per episode, want a small team", nodes/k)
	}
}

// calibrate plays perFamily seeded train tasks of every IID family with both arms, through
// env.run, and logs what it measured.
func calibrate(t *testing.T, perFamily int) (ref, team *armResult) {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	var all []tasks.Task
	for _, fam := range sim.IIDFamilies {
		all = append(all, sim.Tasks(cfg.Sim, cfg.Seed, fam, "", "train", perFamily)...)
	}
	ref = playArm(t, cfg, all, "reference_prior", policy.NewPrior(cfg.Prior))
	team = playArm(t, cfg, all, "strong_team", strongTeam{})
	for _, fam := range sim.IIDFamilies {
		r, s := ref.fam[fam], team.fam[fam]
		t.Logf("%-10s n=%d  reference prior %.3f (%.2f nodes, %.1f decisions, %.0f tokens)  strong team %.3f (%.2f nodes, %.1f decisions, %.0f tokens, full team %.2f)  (+%.3f)",
			fam, r.n, r.rate(), r.nodes/float64(r.n), r.decisions/float64(r.n), r.tokens/float64(r.n),
			s.rate(), s.nodes/float64(s.n), s.decisions/float64(s.n), s.tokens/float64(s.n), float64(s.full)/float64(s.n), s.rate()-r.rate())
	}
	for _, r := range []*armResult{ref, team} {
		for reason, k := range r.reasons {
			t.Logf("%s: %d unhealthy: %s", r.name, k, reason)
		}
		t.Logf("%s: agreement~reward r=%.3f (n=%d episodes stating >= 2 answers, mean agreement %.3f)",
			r.name, calPearson(r.agree, r.agreeReward), len(r.agree), calMean(r.agree))
		var fa, recall, wrong, right float64
		for i := range r.flag {
			if r.inputWrong[i] == 1 {
				wrong++
				recall += r.flag[i]
			} else {
				right++
				fa += r.flag[i]
			}
		}
		t.Logf("%s: verifier flag~input wrong r=%.3f (n=%d checks; recall %.3f, false alarms %.3f, inputs wrong %.3f); flag~episode reward r=%.3f",
			r.name, calPearson(r.flag, r.inputWrong), len(r.flag), recall/max(wrong, 1), fa/max(right, 1),
			wrong/float64(max(len(r.flag), 1)), calPearson(r.flag, r.flagReward))
	}
	return ref, team
}

// playArm plays one episode of every task with pol through env.run, as the rollout stage
// configures it (options as in run, no skill menu), each seeded by its task alone.
func playArm(t *testing.T, cfg *config.Config, all []tasks.Task, name string, pol policy.Policy) *armResult {
	t.Helper()
	start := time.Now()
	rec := &recordingExecutor{inner: sim.New(cfg.Sim, cfg.Seed), logs: map[string]*episodeLog{}}
	e := &env{exec: rec, families: cfg.Families, ref: priorReference{policy.NewPrior(cfg.Prior)},
		options: orchestra.Options{Budget: cfg.Budget, Interleaved: !cfg.Ablated("interleaved-execution"),
			Repair: !cfg.Ablated("learnable-repair")}}
	jobs := make([]Job, len(all))
	for i, task := range all {
		id := fmt.Sprintf("calibration/%s/%s/0", task.ID, name)
		jobs[i] = Job{Task: task, Source: "current", ID: id, Seed: seed.Derive(cfg.Seed, "calibration", task.ID), Script: pol}
	}
	eps, err := runAll(context.Background(), e, jobs, runtime.NumCPU(), nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	r := summarise(name, eps, rec)
	t.Logf("%s: %d episodes in %v; actions %v, %d forced by the budget", name, len(eps), time.Since(start).Round(time.Millisecond), r.kinds, r.forced)
	return r
}

// TestStrongTeamUnderTightBudget: with a budget too small for the whole team, the strong team
// still picks only legal actions, takes the forced finalisation actions and stops healthy.
func TestStrongTeamUnderTightBudget(t *testing.T) {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Budget.Tokens = 48000 // one envelope of 32,768 tokens at a time, and little more
	// Failures spend whole envelopes and strike each agent on its own (the first world's rules),
	// so the budget binds on some tasks.
	cfg.Sim.TimeoutWallShare, cfg.Sim.TruncatedOutputShare, cfg.Sim.FailureCorrelation = 1, 1, 0
	var all []tasks.Task
	for _, fam := range sim.IIDFamilies {
		all = append(all, sim.Tasks(cfg.Sim, cfg.Seed, fam, "", "train", 4)...)
	}
	r := playArm(t, cfg, all, "strong_team_tight", strongTeam{})
	if bad := r.unhealthyTotal(); bad > 0 {
		t.Errorf("%d of %d episodes unhealthy: %v", bad, r.episodes, r.reasons)
	}
	if r.kinds[orchestra.KindStop] != r.episodes {
		t.Errorf("%d STOPs in %d episodes", r.kinds[orchestra.KindStop], r.episodes)
	}
	if r.forced == 0 {
		t.Error("no decision was forced by the budget: the test does not exercise finalisation")
	}
	if r.fullTeams > 0 {
		t.Errorf("%d episodes ran the whole team within %d tokens", r.fullTeams, cfg.Budget.Tokens)
	}
}

// famResult counts one family's episodes of one arm.
type famResult struct {
	n, unhealthy, full               int
	solved, nodes, decisions, tokens float64
}

func (f *famResult) rate() float64 { return f.solved / float64(max(f.n, 1)) }

// armResult is what one arm measured.
type armResult struct {
	name               string
	episodes           int
	fullTeams          int // episodes whose verifier ran with the inputs of three nodes
	fam                map[string]*famResult
	reasons            map[string]int
	kinds              map[string]int // chosen actions by kind
	forced             int            // forced finalisation decisions
	agree, agreeReward []float64      // terminal feature 17 and the reward (>= 2 answers)
	flag, inputWrong   []float64      // per verifier check
	flagReward         []float64      // the reward of the check's episode
}

func (a *armResult) unhealthyTotal() int {
	k := 0
	for _, f := range a.fam {
		k += f.unhealthy
	}
	return k
}

func summarise(name string, eps []*Played, rec *recordingExecutor) *armResult {
	out := &armResult{name: name, episodes: len(eps), fam: map[string]*famResult{}, reasons: map[string]int{}, kinds: map[string]int{}}
	for _, ep := range eps {
		r := ep.Episode
		f := out.fam[r.Family]
		if f == nil {
			f = &famResult{}
			out.fam[r.Family] = f
		}
		f.n++
		f.solved += r.Reward
		f.decisions += float64(r.T)
		f.tokens += float64(r.TokensIn + r.TokensOut)
		if !r.Healthy {
			f.unhealthy++
			out.reasons[*r.UnhealthyReason]++
		}
		for _, d := range ep.Decisions {
			out.kinds[d.ActionKind]++
			if d.Forced {
				out.forced++
			}
		}
		if k := len(ep.Decisions); k > 0 {
			last := ep.Decisions[k-1]
			f.nodes += float64(last.NNodes)
			answers := math.Round(float64(last.Features[15]) * float64(last.NNodes))
			if last.ActionKind == orchestra.KindStop && answers >= 2 {
				out.agree = append(out.agree, float64(last.Features[17]))
				out.agreeReward = append(out.agreeReward, r.Reward)
			}
		}
		log := rec.take(r.TaskID, r.Seed)
		if log.verifierInputs >= 3 {
			f.full++
			out.fullTeams++
		}
		for _, c := range log.checks {
			out.flag = append(out.flag, calBool(c.flagged))
			out.inputWrong = append(out.inputWrong, calBool(!c.inputRight))
			out.flagReward = append(out.flagReward, r.Reward)
		}
	}
	return out
}

// strongTeam is the scripted strong team: three solvers, then a verifier; feedback edges from
// every solver into the verifier, then a rerun of the verifier; then the output is set to a
// node holding the majority answer and the episode stops. It picks only legal actions: when
// the budget cannot run the next planned agent it skips to the output and STOP, and a forced
// finalisation action is taken as it comes.
type strongTeam struct{}

func (strongTeam) LogProbs(d *policy.Decision) ([]float64, error) {
	out := make([]float64, len(d.Legal))
	if len(d.Legal) == 1 {
		return out, nil
	}
	i := teamChoice(d.RT, d.Legal)
	for k := range out {
		if k != i {
			out[k] = math.Inf(-1)
		}
	}
	return out, nil
}

// teamChoice is the index of the strong team's next action among legal.
func teamChoice(rt *orchestra.Runtime, legal []orchestra.Action) int {
	find := func(pred func(orchestra.Action) bool) int { return slices.IndexFunc(legal, pred) }
	add := func(role string) int {
		return find(func(a orchestra.Action) bool {
			return a.Kind == orchestra.KindAddAgent && a.RoleID == role && a.SkillID == ""
		})
	}
	nodes := rt.Nodes()
	var solvers []string
	verifier := ""
	for _, n := range nodes {
		switch {
		case n.Role == "solver":
			solvers = append(solvers, n.ID)
		case n.Role == "verifier" && verifier == "":
			verifier = n.ID
		}
	}
	slices.SortFunc(solvers, func(a, b string) int { return calNodeNumber(a) - calNodeNumber(b) })
	building := rt.OutputNode() == "" // once an output is set, the team is final
	if building && len(solvers) < 3 && verifier == "" {
		if i := add("solver"); i >= 0 {
			return i
		}
		building = false // the budget cannot run another solver
	}
	if building && verifier == "" && len(solvers) > 0 {
		if i := add("verifier"); i >= 0 {
			return i
		}
		building = false
	}
	if building && verifier != "" {
		edges := map[string]bool{}
		for _, e := range rt.Edges() {
			if e.Target == verifier {
				edges[e.Source] = true
			}
		}
		for _, s := range solvers {
			if !edges[s] {
				if i := find(func(a orchestra.Action) bool {
					return a.Kind == orchestra.KindAddEdge && a.SourceID == s && a.TargetID == verifier && a.Protocol == orchestra.ProtocolFeedback
				}); i >= 0 {
					return i
				}
			}
		}
		if v := teamNode(nodes, verifier); v.OutputVersion < 2 {
			if i := find(func(a orchestra.Action) bool {
				return a.Kind == orchestra.KindRerunAgent && a.NodeID == verifier
			}); i >= 0 {
				return i
			}
		}
	}
	if target := teamMajorityNode(nodes, verifier); target != "" && target != rt.OutputNode() {
		if i := find(func(a orchestra.Action) bool { return a.Kind == orchestra.KindSetOutput && a.NodeID == target }); i >= 0 {
			return i
		}
	}
	if i := find(func(a orchestra.Action) bool { return a.Kind == orchestra.KindStop }); i >= 0 {
		return i
	}
	// STOP is withheld (no output yet, or an interactive environment still running): set an
	// output, else keep playing with a rerun or another solver, never dropping anyone.
	for _, pred := range []func(orchestra.Action) bool{
		func(a orchestra.Action) bool { return a.Kind == orchestra.KindSetOutput && rt.OutputNode() == "" },
		func(a orchestra.Action) bool {
			return a.Kind == orchestra.KindRerunAgent && a.NodeID == rt.OutputNode()
		},
		func(a orchestra.Action) bool { return a.Kind == orchestra.KindRerunAgent },
		func(a orchestra.Action) bool {
			return a.Kind == orchestra.KindAddAgent && a.RoleID == "solver" && a.SkillID == ""
		},
		func(a orchestra.Action) bool { return a.Kind != orchestra.KindDropAgent },
	} {
		if i := find(pred); i >= 0 {
			return i
		}
	}
	return 0
}

func teamNode(nodes []orchestra.Node, id string) orchestra.Node {
	for _, n := range nodes {
		if n.ID == id {
			return n
		}
	}
	return orchestra.Node{}
}

// teamMajorityNode is a node holding the most frequent stated answer: the verifier when its answer
// is among the most frequent, else the lowest-numbered such node; with no stated answer, the
// verifier, else the first node of an answering role.
func teamMajorityNode(nodes []orchestra.Node, verifier string) string {
	counts := map[string]int{}
	best := 0
	for _, n := range nodes {
		if n.StatesAnswer() {
			k := textrules.NormalizedAnswer(n.Output)
			counts[k]++
			best = max(best, counts[k])
		}
	}
	var pick string
	for _, n := range slices.SortedFunc(slices.Values(nodes), func(a, b orchestra.Node) int { return calNodeNumber(a.ID) - calNodeNumber(b.ID) }) {
		if !n.StatesAnswer() || counts[textrules.NormalizedAnswer(n.Output)] != best {
			continue
		}
		if n.ID == verifier {
			return n.ID
		}
		if pick == "" {
			pick = n.ID
		}
	}
	if pick != "" {
		return pick
	}
	if verifier != "" {
		return verifier
	}
	for _, n := range nodes {
		if n.Role != "planner" {
			return n.ID
		}
	}
	return ""
}

// verifierCheck is one verifier execution that received answers: whether it flagged the
// majority input and whether that input was right.
type verifierCheck struct{ flagged, inputRight bool }

// episodeLog is what the recording executor saw of one episode.
type episodeLog struct {
	checks         []verifierCheck
	verifierInputs int // the most inbound messages a verifier execution received
}

// recordingExecutor wraps the world and records, per episode, every verifier execution that
// received answers, grading the majority input answer it checked (text families only: their
// grading is a pure function of the text, so grading mid-episode changes nothing).
type recordingExecutor struct {
	inner executor.Executor
	mu    sync.Mutex
	logs  map[string]*episodeLog
}

func episodeKey(taskID string, s uint64) string { return fmt.Sprintf("%s#%d", taskID, s) }

func (r *recordingExecutor) Begin(ctx context.Context, task tasks.Task, s uint64) (executor.Session, error) {
	sess, err := r.inner.Begin(ctx, task, s)
	if err != nil {
		return nil, err
	}
	log := &episodeLog{}
	r.mu.Lock()
	r.logs[episodeKey(task.ID, s)] = log
	r.mu.Unlock()
	return &recordingSession{Session: sess, text: !sim.Interactive(task.Family), log: log}, nil
}

func (r *recordingExecutor) take(taskID string, s uint64) episodeLog {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.logs[episodeKey(taskID, s)]; l != nil {
		return *l
	}
	return episodeLog{}
}

type recordingSession struct {
	executor.Session
	text bool
	log  *episodeLog
}

func (s *recordingSession) Execute(ctx context.Context, req executor.Request) (executor.Result, error) {
	res, err := s.Session.Execute(ctx, req)
	if err != nil || req.Role.ID != "verifier" {
		return res, err
	}
	s.log.verifierInputs = max(s.log.verifierInputs, len(req.Messages))
	if !s.text || res.Status != "success" {
		return res, nil
	}
	// The majority input answer (ties: the first by source id; messages come sorted by it).
	counts := map[string]int{}
	for _, m := range req.Messages {
		if textrules.AnswerPresent(m.Body) {
			counts[textrules.NormalizedAnswer(m.Body)]++
		}
	}
	best, body := 0, ""
	for _, m := range req.Messages {
		if textrules.AnswerPresent(m.Body) {
			if c := counts[textrules.NormalizedAnswer(m.Body)]; c > best {
				best, body = c, m.Body
			}
		}
	}
	if best == 0 {
		return res, nil
	}
	g, err := s.Session.Grade(ctx, body)
	if err != nil {
		return res, fmt.Errorf("grade the verifier's input: %w", err)
	}
	s.log.checks = append(s.log.checks, verifierCheck{
		flagged:    strings.Contains(res.Output, "Verdict: the inputs contain an error"),
		inputRight: g == 1,
	})
	return res, nil
}

func calBool(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func calMean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(max(len(x), 1))
}

func calPearson(x, y []float64) float64 {
	mx, my := calMean(x), calMean(y)
	var sxy, sxx, syy float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
		syy += (y[i] - my) * (y[i] - my)
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// calNodeNumber is a node id's number (n2 before n10).
func calNodeNumber(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "n"))
	return n
}
