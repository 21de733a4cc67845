package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

const testRunSeed = 20260101

func defaultSim(t testing.TB) config.Sim {
	t.Helper()
	c, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	return c.Sim
}

// firstWorld is the hand-set world of configs/world-v1.yaml, whose rows were chosen so that each
// role's promise holds on every family (a researcher helps where search is offered, a plan helps
// the node that receives it): the tests of those mechanisms run on it. The calibrated default
// world keeps the mechanisms but fits their sizes per benchmark (a plan may hurt there).
func firstWorld(t testing.TB) config.Sim {
	t.Helper()
	c, err := config.Load("../../configs/world-v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c.Sim
}

// familyTools are the tools the reference offers per task type (METHOD.md §2.4).
var familyTools = map[string][]string{
	"aime_2026": {"python"}, "hotpotqa": {"search"}, "medqa": {"search"}, "nq_open": {"search"}, "mbpp_plus": {"python"},
}

var roleTools = map[string][]string{"verifier": {"python"}, "researcher": {"search"}, "tool_user": {"python", "search"}}

// testRole adapts a reference role to a family the way the reference's roles_for does.
func testRole(family, id string) executor.Role {
	tt, _ := TaskType(family)
	r := executor.Role{ID: id, Instruction: "Perform the " + id + " role.",
		Envelope: executor.Envelope{InputTokens: 20480, OutputTokens: 12288, ModelCalls: 1, WallMS: 360000}}
	if id == "planner" {
		r.Envelope.OutputTokens, r.Envelope.WallMS, r.NonOutput = 2048, 60000, true
	}
	if tt == "alfworld" {
		r.Envelope = executor.Envelope{InputTokens: 30000, OutputTokens: 5600, ModelCalls: 35, ToolCalls: 25, WallMS: 240000}
		return r
	}
	for _, tool := range roleTools[id] {
		if slices.Contains(familyTools[tt], tool) {
			r.Tools = append(r.Tools, tool)
		}
	}
	if len(r.Tools) > 0 {
		switch id {
		case "researcher":
			r.Envelope = executor.Envelope{InputTokens: 20480, OutputTokens: 12288, ModelCalls: 4, ToolCalls: 3, WallMS: 360000}
		case "tool_user":
			r.Envelope = executor.Envelope{InputTokens: 24576, OutputTokens: 12288, ModelCalls: 5, ToolCalls: 4, WallMS: 360000}
		case "verifier":
			r.Envelope = executor.Envelope{InputTokens: 24576, OutputTokens: 12288, ModelCalls: 4, ToolCalls: 3, WallMS: 360000}
		}
	}
	return r
}

// assemblePrompt builds a node prompt the way METHOD.md §2.5 lays it out.
func assemblePrompt(task tasks.Task, role executor.Role, skills []executor.Skill, msgs []executor.Message, prev *string) string {
	parts := []string{"Role: " + role.Instruction, "Task:\n" + task.Prompt}
	using := []string{"the task"}
	for _, s := range skills {
		parts = append(parts, fmt.Sprintf("Procedure to follow (skill %s):\n%s", s.ID, s.Text))
	}
	if len(skills) > 0 {
		using = append(using, "the procedure")
	}
	for _, m := range msgs {
		parts = append(parts, fmt.Sprintf("Input from agent %s (%s):\n%s", m.SourceID, m.Protocol, m.Body))
	}
	if len(msgs) > 0 {
		using = append(using, "the inputs from other agents")
	}
	if prev != nil {
		parts = append(parts, "Your previous output:\n"+*prev)
		using = append(using, "your previous output")
	}
	joined := using[0]
	if len(using) > 1 {
		joined = strings.Join(using[:len(using)-1], ", ") + " and " + using[len(using)-1]
	}
	parts = append(parts, "Perform your role using "+joined+". Return your result.")
	return strings.Join(parts, "\n\n")
}

// episode drives a Session directly, the way the runtime would: node ids, execution indices,
// request seeds derived from the episode seed, messages from earlier outputs.
type episode struct {
	t       testing.TB
	task    tasks.Task
	sess    executor.Session
	seed    uint64
	exec    int
	outputs map[string]string
	results map[string]executor.Result
	prompts map[string]string // the last prompt sent to each node
}

func begin(t testing.TB, w *World, task tasks.Task, epSeed uint64) *episode {
	t.Helper()
	s, err := w.Begin(context.Background(), task, epSeed)
	if err != nil {
		t.Fatal(err)
	}
	return &episode{t: t, task: task, sess: s, seed: epSeed, outputs: map[string]string{}, results: map[string]executor.Result{}, prompts: map[string]string{}}
}

// run executes node id with role, receiving the current outputs of the sources as messages.
func (e *episode) run(id, roleID string, sources []string, skills []executor.Skill) executor.Result {
	e.t.Helper()
	role := testRole(e.task.Family, roleID)
	var msgs []executor.Message
	for _, src := range sources {
		msgs = append(msgs, executor.Message{SourceID: src, TargetID: id, Protocol: "revise", Body: e.outputs[src]})
	}
	var prev *string
	if out, ok := e.outputs[id]; ok {
		prev = &out
	}
	req := executor.Request{
		NodeID: id, ExecIndex: e.exec, Seed: seed.Derive(e.seed, strconv.Itoa(e.exec), id),
		Role: role, Skills: skills, Messages: msgs, PrevOutput: prev,
		Prompt: assemblePrompt(e.task, role, skills, msgs, prev),
	}
	e.exec++
	e.prompts[id] = req.Prompt
	res, err := e.sess.Execute(context.Background(), req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.outputs[id] = res.Output
	e.results[id] = res
	return res
}

func (e *episode) grade(id string) float64 {
	e.t.Helper()
	g, err := e.sess.Grade(context.Background(), e.outputs[id])
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

// key returns the normalised stated answer of a node ("" when none), as a runtime would compare.
func (e *episode) key(id string) string {
	s := e.sess.(*Session)
	a, ok := s.statedAnswer(e.outputs[id])
	if !ok || e.results[id].Status != "success" {
		return ""
	}
	return s.normalize(a.text)
}

// majorityNode returns the first of ids whose stated answer is the most frequent.
func (e *episode) majorityNode(ids []string) string {
	counts := map[string]int{}
	for _, id := range ids {
		if k := e.key(id); k != "" {
			counts[k]++
		}
	}
	best := ids[0]
	for _, id := range ids {
		if k := e.key(id); k != "" && counts[k] > counts[e.key(best)] {
			best = id
		}
	}
	return best
}

func pearson(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, syy, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		syy += ys[i] * ys[i]
		sxy += xs[i] * ys[i]
	}
	cov := sxy/n - sx*sy/n/n
	vx := sxx/n - sx*sx/n/n
	vy := syy/n - sy*sy/n/n
	if vx <= 0 || vy <= 0 {
		return 0
	}
	return cov / (math.Sqrt(vx) * math.Sqrt(vy))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
