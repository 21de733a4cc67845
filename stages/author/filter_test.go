package author

import (
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/skills"
)

const goodReply = `{"name": "Eliminate options", "description": "Strike options the findings rule out.",
 "trigger": "Use when a question offers lettered options.", "plan": ["List the findings.", "Strike contradicted options."],
 "pitfall": "Picking the familiar option.", "constraint": ["Answer with one letter."]}`

func TestParseReply(t *testing.T) {
	rec, err := parseReply("```json\n" + goodReply + "\n```")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Name != "Eliminate options" || len(rec.Plan) != 2 || len(rec.Pitfalls) != 1 || rec.Pitfalls[0] != "Picking the familiar option." {
		t.Errorf("%+v", rec)
	}
	if rec, err := parseReply(" null \n"); rec != nil || err != nil {
		t.Errorf("null: %v %v", rec, err)
	}
	if rec, err := parseReply("```\nnull\n```"); rec != nil || err != nil {
		t.Errorf("fenced null: %v %v", rec, err)
	}
	for name, reply := range map[string]string{
		"not json":        "Here is a skill: use units.",
		"duplicate key":   strings.Replace(goodReply, `"trigger"`, `"name": "x", "trigger"`, 1),
		"nested dup":      strings.Replace(goodReply, `"plan": [`, `"plan": [{"a":1,"a":2}, `, 1),
		"missing field":   strings.Replace(goodReply, `"constraint": ["Answer with one letter."]`, `"extra": 1`, 1),
		"extra field":     strings.Replace(goodReply, `"constraint"`, `"notes": "x", "constraint"`, 1),
		"name not string": strings.Replace(goodReply, `"Eliminate options"`, `["Eliminate"]`, 1),
		"plan string":     strings.Replace(goodReply, `["List the findings.", "Strike contradicted options."]`, `"List."`, 1),
		"plan null":       strings.Replace(goodReply, `["List the findings.", "Strike contradicted options."]`, `null`, 1),
		"number list":     strings.Replace(goodReply, `["Answer with one letter."]`, `[1]`, 1),
		"two values":      goodReply + " null",
		"array":           "[" + goodReply + "]",
	} {
		if rec, err := parseReply(reply); err == nil {
			t.Errorf("%s: accepted %+v", name, rec)
		}
	}
}

func validRecord() skills.Record {
	rec, _ := parseReply(goodReply)
	return *rec
}

func TestCheckRecord(t *testing.T) {
	prompt := "A 45-year-old man presents with crushing chest pain radiating to the left arm. What is the next step?"
	if err := checkRecord(validRecord(), nil, []string{prompt}); err != nil {
		t.Fatalf("valid record: %v", err)
	}
	long := strings.Repeat("x", 241)
	for name, c := range map[string]struct {
		edit    func(r *skills.Record)
		library []skills.Skill
		reason  string
	}{
		"long name":         {func(r *skills.Record) { r.Name = strings.Repeat("n", 61) }, nil, "name"},
		"empty trigger":     {func(r *skills.Record) { r.Trigger = "" }, nil, "trigger"},
		"two-line desc":     {func(r *skills.Record) { r.Description = "a\nb" }, nil, "description"},
		"long item":         {func(r *skills.Record) { r.Plan[1] = long }, nil, "plan items"},
		"one step":          {func(r *skills.Record) { r.Plan = r.Plan[:1] }, nil, "plan must have 2 to 5"},
		"six steps":         {func(r *skills.Record) { r.Plan = []string{"a", "b", "c", "d", "e", "f"} }, nil, "plan"},
		"no pitfall":        {func(r *skills.Record) { r.Pitfalls = nil }, nil, "pitfall"},
		"four constraints":  {func(r *skills.Record) { r.Constraint = []string{"a", "b", "c", "d"} }, nil, "constraint"},
		"too long":          {func(r *skills.Record) { r.Plan = []string{long[:240], long[:240], long[:240], long[:240], long[:240]} }, nil, "characters, more than 1100"},
		"trajectory talk":   {func(r *skills.Record) { r.Plan[0] = "As the trajectories show, list findings." }, nil, "narrates"},
		"efficacy claim":    {func(r *skills.Record) { r.Description = "This proves that listing works." }, nil, "narrates"},
		"example reference": {func(r *skills.Record) { r.Pitfalls[0] = "The mistake of example e3." }, nil, "narrates"},
		"repeated name": {func(r *skills.Record) {}, []skills.Skill{{ID: "evosteer-1", Record: skills.Record{Name: "ELIMINATE OPTIONS"}}},
			"repeats skill evosteer-1"},
		"leaked prompt": {func(r *skills.Record) {
			r.Pitfalls[0] = "Remember: a 45 year old man presents with crushing chest-pain radiating to the left arm; what is the next step"
		}, nil, "answer leakage"},
	} {
		r := validRecord()
		r.Plan, r.Pitfalls = append([]string{}, r.Plan...), append([]string{}, r.Pitfalls...)
		c.edit(&r)
		err := checkRecord(r, c.library, []string{prompt, "short prompt"})
		if err == nil || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: %v, want an error about %q", name, err, c.reason)
		}
	}
	// Prompts shorter than 32 normalised characters are not checked.
	r := validRecord()
	r.Plan[0] = "Answer the short prompt."
	if err := checkRecord(r, nil, []string{"short prompt"}); err != nil {
		t.Errorf("short prompt: %v", err)
	}
}

func TestNormalise(t *testing.T) {
	if got := normalise("  A 45-year-old MAN, (crushing) pain!  "); got != "a 45 year old man crushing pain" {
		t.Errorf("normalise = %q", got)
	}
}
