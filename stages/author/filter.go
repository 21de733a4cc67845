package author

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/evosteer/evosteer-go/internal/skills"
)

// The enforced output limits (METHOD.md §5.4: looser than the ones the prompt states).
const (
	maxNameChars  = 60
	maxLineChars  = 240 // description, trigger and each list item
	maxTotalChars = 1100
	minLeakChars  = 32 // shorter task prompts are not checked for leakage
)

var listLimits = []struct {
	field    string
	min, max int
}{{"plan", 2, 5}, {"pitfall", 1, 4}, {"constraint", 1, 3}}

// evidenceTalk matches prose that narrates the evidence or claims efficacy instead of stating
// a procedure.
var evidenceTalk = regexp.MustCompile(`(?i)trajector|sample_?id|episode_?id|the (successful|failed|failing|winning|losing) (run|attempt|trajectory)|proves? that|efficacy|\bexamples?\s+e\d+\b`)

// parseReply reads a model's reply: code fences are stripped, JSON null is "no proposal", and
// otherwise the reply must be one JSON object without duplicate keys holding exactly name,
// description, trigger (strings), plan (a list of strings), pitfall and constraint (a list of
// strings or one string).
func parseReply(reply string) (*skills.Record, error) {
	text := stripFences(reply)
	if text == "null" {
		return nil, nil
	}
	if err := noDuplicateKeys(text); err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, fmt.Errorf("reply is not one JSON object or null: %w", err)
	}
	want := []string{"name", "description", "trigger", "plan", "pitfall", "constraint"}
	if len(raw) != len(want) {
		return nil, fmt.Errorf("reply has %d fields, want exactly %v", len(raw), want)
	}
	var rec skills.Record
	for _, f := range want {
		v, ok := raw[f]
		if !ok {
			return nil, fmt.Errorf("reply lacks field %q", f)
		}
		var err error
		switch f {
		case "name":
			err = strictString(v, &rec.Name)
		case "description":
			err = strictString(v, &rec.Description)
		case "trigger":
			err = strictString(v, &rec.Trigger)
		case "plan":
			err = json.Unmarshal(v, &rec.Plan)
			if err == nil && rec.Plan == nil {
				err = errors.New("null")
			}
		case "pitfall":
			rec.Pitfalls, err = listOrString(v)
		case "constraint":
			rec.Constraint, err = listOrString(v)
		}
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f, err)
		}
	}
	return &rec, nil
}

// stripFences removes a surrounding ``` or ```json fence and blank space.
func stripFences(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") && strings.HasSuffix(s, "```") && len(s) >= 6 {
		s = s[3 : len(s)-3]
		if nl := strings.IndexByte(s, '\n'); nl >= 0 && !strings.ContainsAny(s[:nl], "{[\"") {
			s = s[nl+1:] // the info string, e.g. "json"
		}
	}
	return strings.TrimSpace(s)
}

func strictString(v json.RawMessage, dst *string) error {
	if len(v) == 0 || v[0] != '"' {
		return errors.New("must be a string")
	}
	return json.Unmarshal(v, dst)
}

func listOrString(v json.RawMessage) ([]string, error) {
	var s string
	if strictString(v, &s) == nil {
		return []string{s}, nil
	}
	var l []string
	if err := json.Unmarshal(v, &l); err != nil || l == nil {
		return nil, errors.New("must be a list of strings or a string")
	}
	return l, nil
}

// noDuplicateKeys walks the JSON text and fails on an object with a repeated key (which
// encoding/json would silently resolve to the last value) or on trailing data.
func noDuplicateKeys(text string) error {
	dec := json.NewDecoder(strings.NewReader(text))
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				if seen[key] {
					return fmt.Errorf("duplicate key %q", key)
				}
				seen[key] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(); err != nil {
		return fmt.Errorf("reply is not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("reply holds more than one JSON value")
	}
	return nil
}

// checkRecord applies the content rules to a record of any backend: sizes, no evidence talk
// or efficacy claims, a name no skill of the family has (case-insensitive), and no answer
// leakage: no selected task's normalised prompt (of at least 32 characters) inside the
// normalised prose.
func checkRecord(rec skills.Record, family []skills.Skill, prompts []string) error {
	chars := utf8.RuneCountInString
	if rec.Name == "" || chars(rec.Name) > maxNameChars {
		return fmt.Errorf("name must have 1 to %d characters, has %d", maxNameChars, chars(rec.Name))
	}
	for _, f := range []struct{ name, v string }{{"description", rec.Description}, {"trigger", rec.Trigger}} {
		if f.v == "" || chars(f.v) > maxLineChars || strings.ContainsAny(f.v, "\n\r") {
			return fmt.Errorf("%s must be one line of 1 to %d characters", f.name, maxLineChars)
		}
	}
	total := chars(rec.Name) + chars(rec.Description) + chars(rec.Trigger)
	for i, l := range [][]string{rec.Plan, rec.Pitfalls, rec.Constraint} {
		lim := listLimits[i]
		if len(l) < lim.min || len(l) > lim.max {
			return fmt.Errorf("%s must have %d to %d items, has %d", lim.field, lim.min, lim.max, len(l))
		}
		for _, item := range l {
			if item == "" || chars(item) > maxLineChars {
				return fmt.Errorf("%s items must have 1 to %d characters", lim.field, maxLineChars)
			}
			total += chars(item)
		}
	}
	if total > maxTotalChars {
		return fmt.Errorf("the skill has %d characters, more than %d", total, maxTotalChars)
	}
	prose := strings.Join(append(append(append([]string{rec.Name, rec.Description, rec.Trigger}, rec.Plan...), rec.Pitfalls...), rec.Constraint...), "\n")
	if m := evidenceTalk.FindString(prose); m != "" {
		return fmt.Errorf("the skill narrates the evidence or claims efficacy (%q)", m)
	}
	for _, s := range family {
		if strings.EqualFold(s.Record.Name, rec.Name) {
			return fmt.Errorf("name %q repeats skill %s of the family", rec.Name, s.ID)
		}
	}
	norm := normalise(prose)
	for _, p := range prompts {
		if np := normalise(p); len(np) >= minLeakChars && strings.Contains(norm, np) {
			return fmt.Errorf("answer leakage: the skill quotes a task prompt (%.60q...)", np)
		}
	}
	return nil
}

// normalise lowercases s and turns every run of non-letters and non-digits into one space.
func normalise(s string) string {
	var b bytes.Buffer
	space := true
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}
