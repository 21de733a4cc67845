package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// Skill effect classes, as SkillEffect reports them.
const (
	SkillHelpful = "helpful"
	SkillNeutral = "neutral"
	SkillHarmful = "harmful"
)

// Failure kinds the world reports.
const (
	FailureTimeout   = "timeout"
	FailureTruncated = "truncated"
)

// maxFillerChars caps the reasoning prose of one output; the token count charged is unaffected.
const maxFillerChars = 12000

// World is the simulated task world: an executor.Executor whose every draw is derived from the
// run seed, the task id and the request seed. It holds no mutable state and is safe for
// concurrent use; each Session holds one episode's environment state.
type World struct {
	p       config.Sim
	runSeed uint64
}

var _ executor.Executor = (*World)(nil)

// New returns the world for a run.
func New(p config.Sim, runSeed uint64) *World {
	return &World{p: p, runSeed: runSeed}
}

// Params returns the world's parameters.
func (w *World) Params() config.Sim { return w.p }

// SkillEffect returns a skill's hidden logit effect and its class, a pure function of
// (run seed, skill id): helpful with probability skill_helpful_prob (effect
// skill_helpful_effect +- jitter), harmful with skill_harmful_prob (skill_harmful_effect +-
// jitter), else neutral (exactly 0). The effect applies to every execution that binds the skill;
// a skill is offered only in the menu of the task type it was authored for, which is how an
// effect stays inside its task type: the IID family and the OOD benchmark mapped to it.
func (w *World) SkillEffect(skillID string) (effect float64, class string) {
	r := stream(w.runSeed, "sim/skill", skillID)
	u := r.Float64()
	j := (2*r.Float64() - 1) * w.p.SkillEffectJitter
	switch {
	case u < w.p.SkillHelpfulProb:
		return w.p.SkillHelpfulEffect + j, SkillHelpful
	case u < w.p.SkillHelpfulProb+w.p.SkillHarmfulProb:
		return w.p.SkillHarmfulEffect + j, SkillHarmful
	default:
		return 0, SkillNeutral
	}
}

// Begin opens an episode of a task of one of the twelve families.
func (w *World) Begin(ctx context.Context, t tasks.Task, seed uint64) (executor.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fam := t.Family
	if fam == "" {
		fam, _, _ = strings.Cut(t.ID, "/")
	}
	info, ok := familyTable[fam]
	if !ok {
		return nil, fmt.Errorf("sim: task %q: unknown family %q", t.ID, fam)
	}
	fp, _ := w.p.Families.ByBenchmark(info.name)
	s := &Session{w: w, task: t, info: info, fp: fp, seed: seed}
	s.truth = buildTruth(w.p, w.runSeed, t.ID, info, t.Answers)
	s.fail = stream(w.runSeed, "sim/shared-failure", t.ID).Float64()
	s.cands = append([]string{s.truth.Answer}, s.truth.Distractors...)
	s.norm = make([]string, len(s.cands))
	for i, c := range s.cands {
		s.norm[i] = s.normalize(c)
	}
	if info.kind == kindMC {
		s.options = map[string]string{}
		for _, m := range optionLine.FindAllStringSubmatch(t.Prompt, -1) {
			s.options[m[1]] = strings.TrimSpace(m[2])
		}
	}
	return s, nil
}

// Session is one episode on one task. Text families keep no state between executions (every
// result is a function of the request); interactive families keep the environment here. A
// Session serves one episode and is not safe for concurrent use.
type Session struct {
	w       *World
	task    tasks.Task
	info    familyInfo
	fp      config.SimFamily
	truth   TaskTruth
	fail    float64 // the task's failure uniform, shared by every agent (failure_correlation)
	seed    uint64
	cands   []string          // the answer space: correct first, then the distractors
	norm    []string          // cands normalised for comparison
	options map[string]string // multiple choice: letter -> option text, read from the prompt
	env     envState
}

var optionLine = regexp.MustCompile(`(?m)^([A-D])\. (.+)$`)

var _ executor.Session = (*Session)(nil)

type envState struct {
	steps    int
	progress int
	won      bool
	done     bool
	last     string // last observation
}

// EnvironmentDone reports whether an interactive environment has finished (won, or out of
// steps); always false for text families.
func (s *Session) EnvironmentDone() bool { return s.info.kind == kindEnv && s.env.done }

// Grade scores the output node's text with the family's extraction rules against the truth;
// interactive families ignore the text and return 1 iff the goal was reached.
func (s *Session) Grade(ctx context.Context, output string) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	ok := false
	switch s.info.kind {
	case kindEnv:
		ok = s.env.won
	case kindQA, kindQAPassages:
		if a, found := extractQA(output); found {
			ok = qaMatch(a, []string{s.truth.Answer})
		}
	case kindMC:
		if l, found := extractMC(output, s.task.Options); found {
			ok = l == s.truth.Answer
		}
	case kindMath:
		if n, found := extractMath(output); found {
			ok = mathEqual(n, s.truth.Answer)
		}
	case kindCode:
		if c, found := extractCode(output, s.truth.Function); found {
			ok = normalizeCode(c) == normalizeCode(s.truth.Answer)
		}
	}
	if ok {
		return 1, nil
	}
	return 0, nil
}

// answer is an answer inside the world's answer space.
type answer struct {
	idx  int    // 0 correct, k >= 1 distractor k, -1 outside the answer space
	text string // as written: entity, letter, integer or program
}

func (a answer) key() string {
	if a.idx >= 0 {
		return "#" + strconv.Itoa(a.idx)
	}
	return "?" + a.text
}

func (s *Session) normalize(x string) string {
	switch s.info.kind {
	case kindMC:
		return strings.ToUpper(strings.TrimSpace(x))
	case kindMath:
		if r, ok := parseNumber(x); ok {
			return r
		}
		return strings.TrimSpace(x)
	case kindCode:
		return normalizeCode(x)
	default:
		return normalizeQA(x)
	}
}

func parseNumber(x string) (string, bool) {
	x = strings.TrimSpace(x)
	if n, err := strconv.Atoi(x); err == nil {
		return strconv.Itoa(n), true
	}
	return "", false
}

// statedAnswer reads the answer an agent's text states explicitly (an answer cue, a \boxed{}, a
// code fence): what a downstream agent would take from it. Texts without one (plans, truncated
// outputs) state none.
func (s *Session) statedAnswer(text string) (answer, bool) {
	var raw string
	var ok bool
	switch s.info.kind {
	case kindQA, kindQAPassages:
		if hasQACue(text) {
			raw, ok = extractQA(text)
		}
	case kindMC:
		raw, ok = extractMC(text, s.task.Options)
		if ok && !hasQACue(text) && !mcCueAlt.MatchString(text) {
			ok = len(strings.TrimSpace(text)) <= 3
		}
	case kindMath:
		if _, boxed := lastBoxed(text); boxed || hasQACue(text) {
			raw, ok = extractMath(text)
		}
	case kindCode:
		raw, ok = extractCode(text, s.truth.Function)
	}
	if !ok {
		return answer{}, false
	}
	n := s.normalize(raw)
	for i, c := range s.norm {
		if c == n && c != "" {
			return answer{idx: i, text: s.cands[i]}, true
		}
	}
	return answer{idx: -1, text: raw}, true
}

func isPlan(text string) bool { return strings.HasPrefix(strings.TrimSpace(text), "Plan:") }

// Execute runs one agent. The result is a pure function of the task, the request and (for
// interactive families) the environment state left by earlier executions of the episode.
func (s *Session) Execute(ctx context.Context, req executor.Request) (executor.Result, error) {
	if err := ctx.Err(); err != nil {
		return executor.Result{}, err
	}
	rp, ok := s.w.p.Roles.ByID(req.Role.ID)
	if !ok {
		return executor.Result{}, fmt.Errorf("sim: unknown role %q", req.Role.ID)
	}
	x := &run{s: s, p: &s.w.p, req: req, rp: rp, streams: map[string]*rand.Rand{}}
	x.readInputs()
	for _, sk := range req.Skills {
		e, _ := s.w.SkillEffect(sk.ID)
		x.skill += e
	}
	if s.info.kind == kindEnv {
		return x.env(), nil
	}
	return x.text(), nil
}

// run is one execution in progress.
type run struct {
	s       *Session
	p       *config.Sim
	req     executor.Request
	rp      config.SimRole
	streams map[string]*rand.Rand

	answers []answer // answers stated by inbound messages, in message order
	sources []string // their source ids
	plans   int      // inbound plans
	others  int      // inbound messages with neither (failed outputs, environment logs)
	prev    *answer  // the answer of the node's previous output
	skill   float64  // summed effect of the bound skills

	tools    []executor.ToolCall
	searches int
	pyRuns   int
	toolTok  int64 // tokens of tool results fed back to the model
}

// rng returns the execution's generator for one purpose. Each purpose has its own stream, so a
// change in one decision (a skill bound in one arm of a pair) leaves the others' draws alone.
func (x *run) rng(purpose string) *rand.Rand {
	if r, ok := x.streams[purpose]; ok {
		return r
	}
	r := stream(x.req.Seed, "sim/exec", purpose)
	x.streams[purpose] = r
	return r
}

func (x *run) u(purpose string) float64 { return x.rng(purpose).Float64() }

func (x *run) readInputs() {
	for _, m := range x.req.Messages {
		if isPlan(m.Body) {
			x.plans++
			continue
		}
		if x.s.info.kind != kindEnv {
			if a, ok := x.s.statedAnswer(m.Body); ok {
				x.answers = append(x.answers, a)
				x.sources = append(x.sources, m.SourceID)
				continue
			}
		}
		x.others++
	}
	if x.req.PrevOutput != nil && x.s.info.kind != kindEnv {
		if a, ok := x.s.statedAnswer(*x.req.PrevOutput); ok {
			x.prev = &a
		}
	}
}

// majority returns the most frequent inbound answer; ties go to the one stated first.
func majority(as []answer) answer {
	counts := map[string]int{}
	for _, a := range as {
		counts[a.key()]++
	}
	best := as[0]
	for _, a := range as {
		if counts[a.key()] > counts[best.key()] {
			best = a
		}
	}
	return best
}

func (x *run) has(tool string) bool { return slices.Contains(x.req.Role.Tools, tool) }

// toolsLeft is how many more tool calls the envelope allows (0 in the envelope: no limit).
func (x *run) toolsLeft() int {
	if c := x.req.Role.Envelope.ToolCalls; c > 0 {
		return int(c) - len(x.tools)
	}
	return math.MaxInt32
}

// baseLogit is c[role, f] - kappa*d + skills (+ the weighted plan bonus when a plan came in,
// + bare_logit for the executor alone).
func (x *run) baseLogit() float64 {
	z := x.s.fp.BaseLogit + x.rp.Offset - x.s.fp.Kappa*x.s.truth.Difficulty + x.skill
	if x.plans > 0 {
		z += x.p.PlanBonus * x.s.fp.PlanWeight
	}
	if x.req.Bare {
		z += x.s.fp.BareLogit
	}
	return z
}

// drawn is a fresh answer draw's context: the logit and the search outcome.
type drawn struct {
	z         float64
	exclude   int // an answer index the draw must avoid (a flagged input), -2 for none
	missDecoy int // the distractor a missed search returned, 0 for none
}

// fresh draws an answer: correct with probability sigmoid(z), else a distractor (k with
// probability proportional to k^-exponent; after a missed search, the distractor the search
// returned with probability search_mislead).
func (x *run) fresh(d drawn) answer {
	m := len(x.s.truth.Distractors)
	if d.exclude != 0 && x.u("answer") < sigmoid(d.z) && !x.s.truth.Unsolvable {
		return answer{idx: 0, text: x.s.cands[0]}
	}
	if m == 0 {
		return answer{idx: -1, text: "unknown"}
	}
	if d.missDecoy > 0 && d.missDecoy != d.exclude && x.u("mislead") < x.p.SearchMislead {
		return answer{idx: d.missDecoy, text: x.s.cands[d.missDecoy]}
	}
	k := powerLaw(x.rng("distractor"), m, x.p.DistractorExponent, d.exclude)
	if k == 0 {
		k = 1
	}
	return answer{idx: k, text: x.s.cands[k]}
}

// failure is the uniform an execution fails below: the execution's own, or with probability
// failure_correlation the task's, which every agent of the model shares. Each has its own
// stream, so at correlation 0 every draw is as before.
func (x *run) failure() float64 {
	u := x.u("fail")
	if x.u("shared-failure") < x.p.FailureCorrelation {
		return x.s.fail
	}
	return u
}

// flagRate is the probability that a verifier with logit z flags the answer it checks. The
// benchmark's verify_quality q sets how reliably a check tells right from wrong: a wrong answer
// is caught with 1 − (1 − verifier_recall)^q (q looks that each catch it with the recall) and a
// right one doubted with 1 − (1 − fa)^(1/q), fa the world's false-alarm rate, lower for a
// verifier that would itself answer right. q = 1 is the world's rates; toward 0 the check flags
// right answers and passes wrong ones, so verification can cost points as well as gain them.
func (x *run) flagRate(right bool, z float64) float64 {
	p, q := x.p, x.s.fp.VerifyQuality
	if !right {
		return 1 - math.Pow(1-p.VerifierRecall, q)
	}
	if q == 0 {
		return 1
	}
	fa := p.VerifierFalseAlarm * (1 - p.VerifierFalseAlarmCompetence*sigmoid(z))
	return 1 - math.Pow(1-fa, 1/q)
}

// text runs one execution on a text family.
func (x *run) text() executor.Result {
	s, p, role := x.s, x.p, x.req.Role.ID
	if x.failure() < s.truth.FailRate {
		return x.failed()
	}
	if role == "planner" && !(len(x.req.Skills) > 0 && x.u("planner") < p.PlannerSkillAnswer) {
		return x.plan()
	}

	// Tools that shape the answer: search before answering.
	useSearch, usePython := x.has("search"), x.has("python")
	if role == "tool_user" && useSearch && usePython { // a two-step role uses one tool
		if s.fp.PythonWeight >= s.fp.SearchWeight {
			useSearch = false
		} else {
			usePython = false
		}
	}
	d := drawn{z: x.baseLogit(), exclude: -2}
	if useSearch && x.toolsLeft() > 0 {
		hit, decoy := x.search()
		if hit {
			d.z += x.rp.SearchBonus * s.fp.SearchWeight
		} else {
			d.z -= p.SearchMissPenalty * s.fp.SearchWeight
			d.missDecoy = decoy
		}
	}
	usePython = usePython && x.toolsLeft() > 0
	if usePython {
		d.z += x.rp.PythonBonus * s.fp.PythonWeight
	}

	// The answer: inputs first, then the previous output, else a fresh draw.
	var ans answer
	var checked *answer
	flagged := false
	switch {
	case role == "verifier" && len(x.answers) > 0:
		c := majority(x.answers)
		checked = &c
		flagged = x.u("flag") < x.flagRate(c.idx == 0, d.z)
		switch {
		case flagged:
			dd := d
			dd.z += p.VerifierBonus
			dd.exclude = c.idx
			ans = x.fresh(dd)
		case x.u("adopt") < x.rp.Adopt:
			ans = c
		default:
			dd := d
			dd.z += p.InputBonus
			ans = x.fresh(dd)
		}
	case len(x.answers) > 0:
		if x.u("adopt") < x.rp.Adopt {
			ans = majority(x.answers)
		} else {
			dd := d
			dd.z += p.InputBonus
			if x.prev != nil {
				dd.z += p.RerunBonus
			}
			ans = x.fresh(dd)
		}
	case x.prev != nil:
		if x.u("persist") < p.RerunPersistence {
			ans = *x.prev
		} else {
			dd := d
			dd.z += p.RerunBonus
			ans = x.fresh(dd)
		}
	default:
		ans = x.fresh(d)
	}

	// Python runs after answering: the verifier runs the answer it checks, others their own.
	if usePython {
		target := ans
		if checked != nil {
			target = *checked
		}
		x.python(target)
	}
	return x.answered(ans, checked, flagged)
}

// search records one (or two) search calls and reports whether the results hold the correct
// answer, and otherwise which distractor they returned.
func (x *run) search() (hit bool, decoy int) {
	s := x.s
	r := x.rng("search")
	hit = r.Float64() < s.truth.SearchHitRate
	m := len(s.truth.Distractors)
	if !hit && m > 0 {
		decoy = powerLaw(r, m, x.p.DistractorExponent, -2)
	}
	noise := 0
	if m > 0 && r.Float64() < x.p.SearchNoise {
		noise = powerLaw(r, m, x.p.DistractorExponent, decoy)
	}
	main := decoy
	if hit {
		main = 0
	}
	nm := newNamer(r)
	for i := range s.cands {
		for _, w := range strings.Fields(strings.ToLower(s.mention(i))) {
			nm.used[w] = true
		}
	}
	docs := []string{searchDoc(r, nm, s.mention(main))}
	if noise > 0 {
		docs = append(docs, searchDoc(r, nm, s.mention(noise)))
	}
	for len(docs) < 3 {
		docs = append(docs, searchDoc(r, nm, ""))
	}
	x.addSearch(docs)
	// A researcher often searches a second time; the follow-up brings nothing new.
	if x.req.Role.ID == "researcher" && r.Float64() < 0.35 && x.toolsLeft() > 0 {
		x.addSearch([]string{searchDoc(r, nm, ""), searchDoc(r, nm, ""), searchDoc(r, nm, "")})
	}
	return hit, decoy
}

// mention is how a passage names answer idx: the answer itself, or for multiple choice the
// option's text (a passage does not name a letter).
func (s *Session) mention(idx int) string {
	if idx < 0 || idx >= len(s.cands) {
		return ""
	}
	if s.info.kind == kindMC {
		if t, ok := s.options[s.cands[idx]]; ok {
			return t
		}
		return "option " + s.cands[idx]
	}
	return s.cands[idx]
}

func (x *run) addSearch(docs []string) {
	var b strings.Builder
	for i, d := range docs {
		fmt.Fprintf(&b, "Doc %d%s\n", i+1, d)
	}
	res := b.String()
	if len(res) > 2000 {
		res = res[:2000]
	}
	x.tools = append(x.tools, executor.ToolCall{Tool: "search", Status: "success", Result: res})
	x.searches++
	x.toolTok += int64(len(res)+3) / 4
}

// searchDoc writes one retrieved passage, mentioning entity when it is not empty.
func searchDoc(r *rand.Rand, nm *namer, entity string) string {
	title := nm.word() + " " + nm.word()
	body := passage(r, nm, entity, 250+r.IntN(300))
	if _, rest, ok := strings.Cut(body, "] "); ok {
		body = rest
	}
	if entity != "" {
		title = entity
	}
	if len(body) > 600 {
		body = body[:600] + " ..."
	}
	return fmt.Sprintf("(Title: %q) %s", title, body)
}

// python records one python run of an answer: a clean exit for the correct answer, and for a
// wrong one exactly when it passes surface checks (the trap); sometimes a timeout.
func (x *run) python(a answer) {
	s := x.s
	r := x.rng("python")
	clean := a.idx == 0 || (a.idx > 0 && a.idx-1 < len(s.truth.SurfacePass) && s.truth.SurfacePass[a.idx-1])
	status, out := "success", ""
	switch {
	case r.Float64() < x.p.PythonTimeoutRate:
		status, out = "timeout", "Timed out after 15 s."
	case clean && s.info.kind == kindCode:
		out = "(no output)"
	case clean && s.info.kind == kindMath:
		out = a.text + "\n"
	case clean:
		out = "ok\n"
	case s.info.kind == kindCode:
		status = "failed"
		out = "Traceback (most recent call last):\n  File \"main.py\", line 12, in <module>\n    " + s.truth.VisibleTest + "\nAssertionError"
	default:
		status = "failed"
		out = "Traceback (most recent call last):\n  File \"main.py\", line 7, in <module>\n" +
			[]string{"ZeroDivisionError: division by zero", "IndexError: list index out of range", "NameError: name 'total' is not defined"}[r.IntN(3)]
	}
	x.tools = append(x.tools, executor.ToolCall{Tool: "python", Status: status, Result: out})
	x.pyRuns++
	x.toolTok += int64(len(out)+3) / 4
}

// outputTokens draws the log-normal output length of this role on this task.
func (x *run) outputTokens(scale float64) int64 {
	med := x.rp.OutputTokens * x.s.fp.OutputScale * math.Exp(x.p.TokenDifficultySlope*x.s.truth.Difficulty) * scale
	n := med * math.Exp(x.rp.TokenSigma*x.rng("tokens").NormFloat64())
	return max(1, int64(math.Round(n)))
}

// usage assembles the charged usage, never above the role's envelope (0 there: no limit).
func (x *run) usage(out int64, extraWallMS int64) executor.Usage {
	prompt := int64(len(x.req.Prompt)+3) / 4
	tc := int64(len(x.tools))
	in := prompt*(1+tc) + x.toolTok
	calls := 1 + tc
	wall := int64(math.Round(x.p.PromptMSPerToken*float64(in)+x.p.OutputMSPerToken*float64(out))) +
		int64(x.searches)*x.p.SearchMS + int64(x.pyRuns)*x.p.PythonMS + extraWallMS
	env := x.req.Role.Envelope
	capTo := func(v, c int64) int64 {
		if c > 0 && v > c {
			return c
		}
		return v
	}
	return executor.Usage{
		TokensIn:   capTo(in, env.InputTokens),
		TokensOut:  capTo(out, env.OutputTokens),
		ModelCalls: capTo(calls, env.ModelCalls),
		ToolCalls:  capTo(tc, env.ToolCalls),
		WallMS:     capTo(wall, env.WallMS),
	}
}

// failed is a timeout or a truncation: prose cut off before any answer.
func (x *run) failed() executor.Result {
	r := x.rng("failure")
	kind := FailureTimeout
	if r.Float64() < x.p.TruncatedShare {
		kind = FailureTruncated
	}
	out := x.outputTokens(1)
	env := x.req.Role.Envelope
	var extraWall int64
	if kind == FailureTruncated {
		if env.OutputTokens > 0 {
			out = max(1, int64(math.Round(x.p.TruncatedOutputShare*float64(env.OutputTokens))))
		} else {
			out *= 4
		}
	} else {
		out = max(1, int64(float64(out)*(0.3+0.6*r.Float64())))
		if env.WallMS > 0 {
			// The clock ran out: timeout_wall_share of the envelope is spent.
			extraWall = int64(math.Round(x.p.TimeoutWallShare * float64(env.WallMS)))
		}
	}
	n := min(maxFillerChars, int(4*out))
	text := truncate(filler(x.rng("text"), x.req.Role.ID, n+40), n)
	return executor.Result{
		Output:        text,
		AnswerPresent: false,
		Status:        "failed",
		FailureKind:   kind,
		Usage:         x.usage(out, extraWall),
		Tools:         x.tools,
	}
}

var planSteps = map[kind][]string{
	kindQAPassages: {"Read the question and name the entities it asks about.", "Find the passages that mention each entity.",
		"Link the facts across the passages step by step.", "Check that the linked facts match every condition of the question.",
		"State the short result in the requested form."},
	kindQA: {"Identify what kind of entity the question asks for.", "Recall the facts tied to the named subject.",
		"Rule out candidates that fail a stated condition.", "State the short result in the requested form."},
	kindMC: {"Summarise the key findings of the question.", "List what each option would predict.",
		"Eliminate the options that conflict with the findings.", "Compare the remaining options on the decisive finding.",
		"Give the letter of the best option in the requested form."},
	kindMath: {"Restate the problem and the quantity to compute.", "Set up the relations the conditions give.",
		"Simplify and solve the relations carefully.", "Check the result against the constraints and the stated range.",
		"Write the final integer in the requested format."},
	kindCode: {"Extract the function name, parameters and return value from the task.", "Work out the behaviour on the visible test.",
		"Consider edge cases: empty inputs, duplicates, negative values.", "Write the simplest function that meets the specification.",
		"Return the complete function in a code block."},
	kindEnv: {"Read the goal from the reset observation.", "Locate the objects the goal names.",
		"Carry out the required actions in order.", "Check the goal condition before finishing."},
}

// plan is a planner's output: a titled numbered list with no answer.
func (x *run) plan() executor.Result {
	steps := planSteps[x.s.info.kind]
	var b strings.Builder
	b.WriteString("Plan:")
	for i, st := range steps {
		fmt.Fprintf(&b, "\n%d. %s", i+1, st)
	}
	return executor.Result{
		Output:        b.String(),
		AnswerPresent: false,
		Status:        "success",
		Usage:         x.usage(x.outputTokens(1), 0),
		Tools:         x.tools,
	}
}

// finalLine renders an answer in the family's required form.
func (s *Session) finalLine(a answer) string {
	switch s.info.kind {
	case kindMath:
		return "So the final result is \\boxed{" + a.text + "}."
	case kindCode:
		return "```python\n" + a.text + "\n```"
	default:
		return "Answer: " + a.text
	}
}

// answered renders an answering execution's output.
func (x *run) answered(a answer, checked *answer, flagged bool) executor.Result {
	s, role := x.s, x.req.Role.ID
	out := x.outputTokens(1)
	final := s.finalLine(a)
	var b strings.Builder
	switch role {
	case "tool_user": // a tool-only role replies with the final result alone
		b.WriteString(final)
	default:
		if role == "verifier" && checked != nil {
			fmt.Fprintf(&b, "Inputs checked: %s.\n", strings.Join(x.sources, ", "))
			if flagged {
				b.WriteString("Verdict: the inputs contain an error; the stated result does not hold up against the task.\n\n")
			} else {
				b.WriteString("Verdict: the inputs are consistent with the task.\n\n")
			}
		}
		if role == "researcher" && len(x.tools) > 0 {
			b.WriteString("Facts:\n- The task names the subject and the relation asked about (task text).\n")
			b.WriteString("- The retrieved passages were compared with the task (search results).\n\n")
		}
		n := int(4*out) - len(final) - b.Len()
		n = max(40, min(maxFillerChars, n))
		b.WriteString(filler(x.rng("text"), role, n))
		b.WriteString("\n\n" + final)
	}
	return executor.Result{
		Output:        b.String(),
		AnswerPresent: true,
		Status:        "success",
		Usage:         x.usage(out, 0),
		Tools:         x.tools,
	}
}
