package orchestra

import (
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor"
)

func roleIDs(roles []executor.Role) []string {
	var ids []string
	for _, r := range roles {
		ids = append(ids, r.ID)
	}
	return ids
}

func findRole(t *testing.T, roles []executor.Role, id string) executor.Role {
	t.Helper()
	for _, r := range roles {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("role %s missing from %v", id, roleIDs(roles))
	return executor.Role{}
}

func TestRolesForSearchFamily(t *testing.T) {
	roles := RolesFor("hotpotqa", "hotpotqa")
	if got := roleIDs(roles); !slices.Equal(got, []string{"solver", "verifier", "planner", "researcher", "finalizer", "tool_user"}) {
		t.Fatalf("roles %v", got)
	}
	verifier := findRole(t, roles, "verifier")
	if len(verifier.Tools) != 0 || verifier.Envelope != defaultEnvelope || strings.Contains(verifier.Instruction, "python tool") {
		t.Errorf("verifier without python offered: %+v", verifier)
	}
	researcher := findRole(t, roles, "researcher")
	if !slices.Equal(researcher.Tools, []string{"search"}) || researcher.Envelope != toolEnvelopes["researcher"] ||
		!strings.HasSuffix(researcher.Instruction, " "+toolSentences["researcher"]["search"]) {
		t.Errorf("researcher with search: %+v", researcher)
	}
	toolUser := findRole(t, roles, "tool_user")
	if !slices.Equal(toolUser.Tools, []string{"search"}) || toolUser.Envelope != (executor.Envelope{InputTokens: 24576, OutputTokens: 12288, ModelCalls: 5, ToolCalls: 4, WallMS: 360000}) {
		t.Errorf("tool_user with search: %+v", toolUser)
	}
	planner := findRole(t, roles, "planner")
	if !planner.NonOutput || planner.Envelope.OutputTokens != 2048 || planner.Envelope.WallMS != 60000 {
		t.Errorf("planner: %+v", planner)
	}
	for _, r := range roles {
		if r.NonOutput != (r.ID == "planner") {
			t.Errorf("%s NonOutput = %v", r.ID, r.NonOutput)
		}
	}
}

func TestRolesForPythonFamilies(t *testing.T) {
	for _, c := range []struct{ family, taskType string }{{"aime_2026", ""}, {"math_hard", "aime_2026"}, {"mbpp_plus", "mbpp_plus"}} {
		roles := RolesFor(c.family, c.taskType)
		verifier := findRole(t, roles, "verifier")
		if !slices.Equal(verifier.Tools, []string{"python"}) || verifier.Envelope != (executor.Envelope{InputTokens: 24576, OutputTokens: 12288, ModelCalls: 4, ToolCalls: 3, WallMS: 360000}) ||
			!strings.HasSuffix(verifier.Instruction, " "+toolSentences["verifier"]["python"]) {
			t.Errorf("%s verifier: %+v", c.family, verifier)
		}
		researcher := findRole(t, roles, "researcher")
		if len(researcher.Tools) != 0 || researcher.Envelope != defaultEnvelope || strings.Contains(researcher.Instruction, "search tool") {
			t.Errorf("%s researcher without search: %+v", c.family, researcher)
		}
		toolUser := findRole(t, roles, "tool_user")
		if !slices.Equal(toolUser.Tools, []string{"python"}) {
			t.Errorf("%s tool_user tools %v", c.family, toolUser.Tools)
		}
		isMBPP := c.family == "mbpp_plus"
		if got := toolUser.Instruction == familyInstructions["mbpp_plus"]["tool_user"]; got != isMBPP {
			t.Errorf("%s tool_user family instruction used = %v", c.family, got)
		}
	}
}

func TestRolesForEnvironmentFamilies(t *testing.T) {
	for _, c := range []struct{ family, taskType string }{{"alfworld", "alfworld"}, {"webshop", "alfworld"}} {
		roles := RolesFor(c.family, c.taskType)
		if got := roleIDs(roles); !slices.Equal(got, []string{"solver", "verifier", "planner", "researcher", "finalizer"}) {
			t.Fatalf("%s roles %v (tool_user must be dropped)", c.family, got)
		}
		for _, r := range roles {
			if len(r.Tools) != 0 || r.Envelope != environmentEnvelope {
				t.Errorf("%s %s: tools %v envelope %+v", c.family, r.ID, r.Tools, r.Envelope)
			}
		}
		if !findRole(t, roles, "planner").NonOutput {
			t.Error("planner lost NonOutput")
		}
	}
}

func TestRolesForUnknownTypeDropsToolOnlyRole(t *testing.T) {
	roles := RolesFor("custom", "")
	if got := roleIDs(roles); slices.Contains(got, "tool_user") || len(got) != 5 {
		t.Errorf("roles %v", got)
	}
	// Adapting must not alias the package's base roles.
	roles[0].Instruction = "changed"
	if RolesFor("custom", "")[0].Instruction == "changed" {
		t.Error("RolesFor returned shared state")
	}
}
