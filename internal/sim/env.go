package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/evosteer/evosteer-go/internal/executor"
)

var (
	alfProgress = []string{"go to countertop 1", "take mug 1 from countertop 1", "go to microwave 1", "open microwave 1",
		"heat mug 1 with microwave 1", "go to coffeemachine 1", "put mug 1 in/on coffeemachine 1", "examine mug 1"}
	alfIdle = []string{"look", "inventory", "go to drawer 2", "open drawer 2", "close drawer 2", "go to shelf 3",
		"examine shelf 3", "go to cabinet 4"}
	alfObs = []string{"You arrive at countertop 1. On the countertop 1, you see a mug 1 and a spoon 2.",
		"You pick up the mug 1 from the countertop 1.", "The microwave 1 is open. In it, you see nothing.",
		"Nothing happens.", "You arrive at shelf 3. On the shelf 3, you see a vase 2.", "The drawer 2 is empty."}
	shopProgress = []string{"search[item matching the instruction]", "click[first matching result]", "click[size option]",
		"click[color option]", "click[description]", "click[< prev]", "click[Buy Now]"}
	shopIdle = []string{"click[next >]", "click[back to search]", "search[broader query]", "click[reviews]"}
	shopObs  = []string{"[Back to Search] Page 1 (Total results: 50) [Next >]", "You have clicked the item page.",
		"Instruction: find the requested item within the price limit.", "Invalid action: nothing to click here."}
)

type envOutput struct {
	Actions     []string `json:"actions"`
	Observation string   `json:"observation"`
	EpisodeDone bool     `json:"episode_done"`
	StepsTotal  int      `json:"environment_steps_total"`
}

// env runs one execution on an interactive family: up to env_steps_per_node steps (and the
// envelope's tool calls) against the episode's hidden progress counter, each step making
// progress with probability sigmoid(z); the goal is reached when progress meets the hidden
// requirement within env_max_steps steps in all.
func (x *run) env() executor.Result {
	s, p := x.s, x.p
	st := &s.env
	role := x.req.Role.ID
	z := x.baseLogit()
	if len(x.answers) > 0 || x.others > 0 {
		z += p.InputBonus
	}
	if x.req.PrevOutput != nil {
		z += p.RerunBonus
	}

	if role == "planner" && !(len(x.req.Skills) > 0 && x.u("planner") < p.PlannerSkillAnswer) {
		res := x.plan()
		res.Environment = s.envReport(p.EnvStepsPerNode, p.EnvMaxSteps)
		return res
	}

	allowed := p.EnvStepsPerNode
	env := x.req.Role.Envelope
	if env.ToolCalls > 0 {
		allowed = min(allowed, int(env.ToolCalls))
	}
	if env.ModelCalls > 0 {
		allowed = min(allowed, int(env.ModelCalls))
	}
	allowed = max(0, min(allowed, p.EnvMaxSteps-st.steps))
	if st.done {
		allowed = 0
	}
	failed := x.failure() < s.truth.FailRate
	failKind := ""
	if failed {
		failKind = FailureTimeout
		if x.u("failure") < p.TruncatedShare {
			failKind = FailureTruncated
		}
		allowed = int(math.Floor(x.u("failure-step") * float64(allowed)))
	}

	progressActs, idleActs, obs := alfProgress, alfIdle, alfObs
	if s.info.name == "webshop" {
		progressActs, idleActs, obs = shopProgress, shopIdle, shopObs
	}
	r := x.rng("env")
	pStep := sigmoid(z)
	taken, gained := 0, 0
	var actions []string
	var outTok float64
	for taken < allowed && !st.won {
		taken++
		if r.Float64() < pStep {
			gained++
			st.progress++
			actions = append(actions, progressActs[(st.progress-1)%len(progressActs)])
			if st.progress >= s.truth.Requirement {
				st.won = true
			}
		} else {
			actions = append(actions, idleActs[r.IntN(len(idleActs))])
		}
		outTok += float64(p.EnvStepOutputTokens) * s.fp.OutputScale * (0.7 + 0.6*r.Float64())
	}
	st.steps += taken
	if st.won || st.steps >= p.EnvMaxSteps {
		st.done = true
	}
	switch {
	case st.won:
		st.last = "Task completed: the goal condition is satisfied."
	case taken > 0:
		st.last = obs[r.IntN(len(obs))]
	case st.last == "":
		st.last = "You are in the middle of a room. Looking quickly around you, you see several objects."
	}
	if actions == nil {
		actions = []string{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(envOutput{Actions: actions, Observation: st.last, EpisodeDone: st.done, StepsTotal: st.steps}) // plain data
	text := bytes.TrimSpace(buf.Bytes())

	status := "success"
	switch {
	case failed:
		status = FailureTimeout
	case gained == 0 && !st.won:
		status = "failed"
	}
	x.tools = append(x.tools, executor.ToolCall{Tool: "environment", Status: status,
		Result: fmt.Sprintf("%d steps; %s", taken, st.last)})

	out := max(1, int64(math.Round(outTok)))
	if taken == 0 {
		out = max(1, int64(float64(p.EnvStepOutputTokens)*s.fp.OutputScale/2))
	}
	prompt := int64(len(x.req.Prompt)+3) / 4
	in := prompt + int64(taken)*p.EnvStepInputTokens
	wall := int64(math.Round(p.PromptMSPerToken*float64(in)+p.OutputMSPerToken*float64(out))) + int64(taken)*p.EnvStepWallMS
	if failed && failKind == FailureTimeout && env.WallMS > 0 {
		wall = env.WallMS
	}
	capTo := func(v, c int64) int64 {
		if c > 0 && v > c {
			return c
		}
		return v
	}
	res := executor.Result{
		Output:        string(text),
		AnswerPresent: !failed,
		Status:        "success",
		Usage: executor.Usage{
			TokensIn:   capTo(in, env.InputTokens),
			TokensOut:  capTo(out, env.OutputTokens),
			ModelCalls: capTo(int64(max(1, taken)), env.ModelCalls),
			ToolCalls:  capTo(int64(taken), env.ToolCalls),
			WallMS:     capTo(wall, env.WallMS),
		},
		Tools:       x.tools,
		Environment: s.envReport(p.EnvStepsPerNode, p.EnvMaxSteps),
	}
	if failed {
		res.Status, res.FailureKind = "failed", failKind
	}
	return res
}

// envReport describes the environment: phases are blocks of env_steps_per_node steps.
func (s *Session) envReport(perNode, maxSteps int) executor.Environment {
	phases := (maxSteps + perNode - 1) / perNode
	return executor.Environment{
		Enabled:        true,
		StepsCompleted: s.env.steps,
		MaxPhases:      phases,
		StepsPerPhase:  perNode,
		PhaseIndex:     min(phases, s.env.steps/perNode),
		Done:           s.env.done,
	}
}
