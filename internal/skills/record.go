package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/evosteer/evosteer-go/internal/orchestra"
)

// Record is the content of a skill (METHOD.md §5.1): a short operating procedure that one
// executing node follows when the skill is bound to it.
type Record struct {
	Name        string
	Description string
	Trigger     string
	Plan        []string
	Pitfalls    []string
	Constraint  []string
}

// IDPrefix starts every skill id.
const IDPrefix = "evosteer-"

// Body is the record's canonical JSON, the reference's body: the object {constraint,
// description, name, pitfall, plan, trigger} with sorted keys, compact separators and
// NFC-normalised strings; the three lists are always lists.
func (r Record) Body() string {
	list := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	return orchestra.CanonicalJSON(map[string]any{
		"name": r.Name, "description": r.Description, "trigger": r.Trigger,
		"plan": list(r.Plan), "pitfall": list(r.Pitfalls), "constraint": list(r.Constraint),
	})
}

// ContentHash is the sha256 (hex) of Body.
func (r Record) ContentHash() string {
	sum := sha256.Sum256([]byte(r.Body()))
	return hex.EncodeToString(sum[:])
}

// ID is the skill id: "evosteer-" + the first 20 hex digits of ContentHash.
func (r Record) ID() string { return IDPrefix + r.ContentHash()[:20] }

// Render is the procedure text the executor sees when the skill is bound (METHOD.md §2.5).
func (r Record) Render() string {
	return orchestra.RenderSkill(r.Name, r.Description, r.Trigger, r.Plan, r.Pitfalls, r.Constraint)
}

// Canonical returns the record as its Body reads back: strings NFC-normalised, nil lists
// empty. Records are stored in this form, so that a record and its replay compare equal.
func (r Record) Canonical() Record {
	c, err := ParseBody(r.Body())
	if err != nil {
		panic(fmt.Sprintf("skills: a record's own body does not parse: %v", err)) // Body always writes the six fields
	}
	return c
}

// ParseBody reads a body written by Body back into a record: exactly the six fields, the
// lists as lists. A body that does not re-encode to itself byte for byte (other key order or
// spacing, a duplicate key, a non-NFC string) is an error, so a stored body cannot disagree
// with its hash.
func ParseBody(body string) (Record, error) {
	var b struct {
		Name        *string   `json:"name"`
		Description *string   `json:"description"`
		Trigger     *string   `json:"trigger"`
		Plan        *[]string `json:"plan"`
		Pitfall     *[]string `json:"pitfall"`
		Constraint  *[]string `json:"constraint"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return Record{}, fmt.Errorf("skill body: %w", err)
	}
	if b.Name == nil || b.Description == nil || b.Trigger == nil || b.Plan == nil || b.Pitfall == nil || b.Constraint == nil {
		return Record{}, fmt.Errorf("skill body: want the six fields constraint, description, name, pitfall, plan, trigger: %s", body)
	}
	r := Record{Name: *b.Name, Description: *b.Description, Trigger: *b.Trigger, Plan: *b.Plan, Pitfalls: *b.Pitfall, Constraint: *b.Constraint}
	if got := r.Body(); got != body {
		return Record{}, fmt.Errorf("skill body is not canonical: %s re-encodes to %s", body, got)
	}
	return r, nil
}
