package orchestra

import (
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/textrules"
)

func TestPromptAssemblyExact(t *testing.T) {
	sess := newFake()
	roles := []executor.Role{customRole("solver", 20480, 12288, false)}
	r := newTestRuntime(qaTask, sess, Options{Roles: roles, Menu: testMenu, Budget: testBudget, Interleaved: true, Repair: true})
	mustApply(t, r, addAgent("n0", "solver", "s1"))
	mustApply(t, r, addAgent("n1", "solver", ""))
	mustApply(t, r, addAgent("n2", "solver", ""))
	mustApply(t, r, addEdge("n2", "n0", ProtocolFeedback))
	mustApply(t, r, addEdge("n1", "n0", ProtocolRevise))
	want := "Role: Act as solver.\n\n" +
		"Task:\nWhich city is the capital of France?\n\n" +
		"Procedure to follow (skill s1):\nName: First\nSteps:\n1. do one\n\n" +
		"Input from agent n1 (revise):\nAnswer: n1-0\n\n" +
		"Input from agent n2 (feedback):\nAnswer: n2-0\n\n" +
		"Your previous output:\nAnswer: n0-0\n\n" +
		"Perform your role using the task, the procedure, the inputs from other agents and your previous output. Return your result."
	if got := sess.reqs[len(sess.reqs)-1].Prompt; got != want {
		t.Errorf("prompt:\n%s\n--- want:\n%s", got, want)
	}
}

func TestPromptClosingSentence(t *testing.T) {
	role := customRole("solver", 20480, 12288, false)
	prev := "before"
	msgs := []executor.Message{{SourceID: "n1", Protocol: ProtocolFeedback, Body: "x"}}
	skills := []executor.Skill{{ID: "s1", Text: "t"}}
	cases := []struct {
		skills []executor.Skill
		msgs   []executor.Message
		prev   *string
		want   string
	}{
		{nil, nil, nil, "Perform your role using the task. Return your result."},
		{nil, nil, &prev, "Perform your role using the task and your previous output. Return your result."},
		{skills, msgs, nil, "Perform your role using the task, the procedure and the inputs from other agents. Return your result."},
		{nil, msgs, &prev, "Perform your role using the task, the inputs from other agents and your previous output. Return your result."},
	}
	for _, c := range cases {
		got := renderPrompt(role, "T", c.skills, c.msgs, c.prev)
		if !strings.HasSuffix(got, "\n\n"+c.want) {
			t.Errorf("closing of %q, want %q", got, c.want)
		}
	}
	if got := renderPrompt(role, "T", nil, nil, nil); got != "Role: Act as solver.\n\nTask:\nT\n\nPerform your role using the task. Return your result." {
		t.Errorf("minimal prompt %q", got)
	}
}

func TestElideToFit(t *testing.T) {
	got := elideToFit([]rune("abcdefghijklmnopqrst"), 10)
	if want := "abcd\n[... 10 characters omitted to fit the input limit ...]\nopqrst"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := elideToFit([]rune("ééé"), 3); got != "ééé" {
		t.Errorf("uncut text changed: %q", got)
	}
}

func TestPromptFitting(t *testing.T) {
	role := customRole("solver", 1000, 100, false) // limit min(1000, 32768−100) = 1000 tokens
	prev := strings.Repeat("c", 900)
	msgs := []executor.Message{
		{SourceID: "n1", Protocol: ProtocolFeedback, Body: strings.Repeat("a", 3000)},
		{SourceID: "n2", Protocol: ProtocolRevise, Body: strings.Repeat("b", 5000)},
	}
	got := fitPrompt(role, "T", nil, msgs, &prev)
	if textrules.Tokens(got) > 1000 || !strings.Contains(got, "characters omitted to fit the input limit") {
		t.Errorf("fitted prompt has %d tokens", textrules.Tokens(got))
	}
	if !strings.Contains(got, "Your previous output:\n"+prev+"\n\n") {
		t.Error("the 900-character previous output was cut before the longer messages")
	}
	// Equal lengths: the later message is cut first, and one cut suffices here.
	msgs = []executor.Message{
		{SourceID: "n1", Protocol: ProtocolFeedback, Body: strings.Repeat("a", 2000)},
		{SourceID: "n2", Protocol: ProtocolFeedback, Body: strings.Repeat("b", 2000)},
	}
	got = fitPrompt(role, "T", nil, msgs, nil)
	if !strings.Contains(got, "Input from agent n1 (feedback):\n"+strings.Repeat("a", 2000)+"\n\n") ||
		!strings.Contains(got, "Input from agent n2 (feedback):\n"+strings.Repeat("b", 560)+"\n[... 600 characters omitted") {
		t.Errorf("tie-break cut the wrong message:\n%.300s", got)
	}
	// Inputs at or below the floor are never cut, even when the prompt stays too long.
	tiny := customRole("solver", 10, 100, false)
	msgs = []executor.Message{{SourceID: "n1", Protocol: ProtocolFeedback, Body: strings.Repeat("a", 800)}}
	if got := fitPrompt(tiny, "T", nil, msgs, nil); got != renderPrompt(tiny, "T", nil, msgs, nil) {
		t.Error("an input at the floor was cut")
	}
}

func TestRenderSkill(t *testing.T) {
	got := RenderSkill("Check units", "Avoid unit errors", "numeric answers", []string{"convert", "compare"}, []string{"rounding"}, []string{"SI only"})
	want := "Name: Check units\nPurpose: Avoid unit errors\nUse when: numeric answers\nSteps:\n1. convert\n2. compare\nPitfalls to avoid:\n- rounding\nConstraint:\n- SI only"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := RenderSkill("N", "", "", nil, nil, nil); got != "Name: N" {
		t.Errorf("empty parts not omitted: %q", got)
	}
}
