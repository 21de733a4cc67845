package tasks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
)

// MaxTaskLine bounds one JSONL row, so that a damaged or hostile file cannot make init hold a
// huge line and its copies in memory; MBPP+ rows, the longest, carry test scripts of about 24 kB.
const MaxTaskLine = 16 << 20

// rowFields are the fields a row maps onto Task; every other field goes to Task.Extra.
var rowFields = []string{"task_id", "kind", "task_type", "split", "source_id", "origin", "prompt",
	"answer", "answers", "options", "prior_rate", "prior_count"}

// ReadJSONL reads a task file in the reference release's JSONL row schema (METHOD.md §6.1).
func ReadJSONL(path string) ([]Task, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	defer f.Close()
	return ParseJSONL(path, f)
}

// ParseJSONL reads task rows, one JSON object a line; blank lines are skipped. A malformed row
// fails with name, line number and field. Gold answers come from "answers" when it is a
// nonempty list, else from "answer" (a string or a list), as the reference graders read them.
func ParseJSONL(name string, r io.Reader) ([]Task, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var out []Task
	lineOf := map[string]int{}
	for n := 1; ; n++ {
		line, err := readLine(br, MaxTaskLine)
		if errors.Is(err, errLongLine) {
			return nil, fmt.Errorf("read %s: line %d: longer than %d MiB, the limit of one task row (the longest shipped rows, MBPP+, are about 24 kB); shorten the row or remove it", name, n, MaxTaskLine>>20)
		}
		if errors.Is(err, io.EOF) && line == nil {
			return out, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read %s: line %d: %w", name, n, err)
		}
		line = bytes.TrimPrefix(line, []byte("\uFEFF"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		t, err := parseRow(line)
		if err != nil {
			return nil, fmt.Errorf("read %s: line %d: %w", name, n, err)
		}
		if first, dup := lineOf[t.ID]; dup {
			return nil, fmt.Errorf("read %s: line %d: field \"task_id\": %q already on line %d", name, n, t.ID, first)
		}
		lineOf[t.ID] = n
		out = append(out, t)
	}
}

// errLongLine is readLine's refusal of a line over its limit.
var errLongLine = errors.New("line too long")

// readLine reads through the next '\n' (a final line without one included), refusing a line
// longer than max bytes after reading at most one buffer beyond it.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("%w: longer than %d bytes", errLongLine, max)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return line, nil
			}
			return line, err
		}
	}
}

// fieldError names the field a row fails on.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return fmt.Sprintf("field %q: %v", e.field, e.err) }
func (e *fieldError) Unwrap() error { return e.err }

func fieldErr(field, format string, args ...any) error {
	return &fieldError{field, fmt.Errorf(format, args...)}
}

// row is one decoded line with typed accessors that name the field on error.
type row map[string]json.RawMessage

func (r row) present(k string) bool {
	v, ok := r[k]
	return ok && string(v) != "null"
}

func (r row) str(k string, required bool) (string, error) {
	if !r.present(k) {
		if required {
			return "", fieldErr(k, "missing")
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(r[k], &s); err != nil {
		return "", fieldErr(k, "want a string, got %s", jsonKind(r[k]))
	}
	if required && s == "" {
		return "", fieldErr(k, "empty")
	}
	return s, nil
}

func (r row) strings(k string) ([]string, error) {
	if !r.present(k) {
		return nil, nil
	}
	var ss []string
	if err := json.Unmarshal(r[k], &ss); err != nil {
		return nil, fieldErr(k, "want a list of strings, got %s", jsonKind(r[k]))
	}
	return ss, nil
}

// answerList reads a field that is a string or a list of strings.
func (r row) answerList(k string) ([]string, error) {
	if !r.present(k) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(r[k], &s); err == nil {
		return []string{s}, nil
	}
	var ss []string
	if err := json.Unmarshal(r[k], &ss); err != nil {
		return nil, fieldErr(k, "want a string or a list of strings, got %s", jsonKind(r[k]))
	}
	return ss, nil
}

func jsonKind(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "nothing"
	case t[0] == '"':
		return "a string"
	case t[0] == '[':
		return "a list"
	case t[0] == '{':
		return "an object"
	case t[0] == 't' || t[0] == 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

func parseRow(line []byte) (Task, error) {
	var r row
	if err := json.Unmarshal(line, &r); err != nil {
		return Task{}, fmt.Errorf("not a JSON object: %w", err)
	}
	var t Task
	var err error
	if t.ID, err = r.str("task_id", true); err != nil {
		return Task{}, err
	}
	if err := checkID(t.ID); err != nil {
		return Task{}, &fieldError{"task_id", err}
	}
	if t.Family, err = r.str("kind", true); err != nil {
		return Task{}, err
	}
	fam, ok := FamilyOf(t.Family)
	if !ok {
		return Task{}, fieldErr("kind", "unknown family %q (known: %v)", t.Family, FamilyNames())
	}
	if t.TaskType, err = r.str("task_type", true); err != nil {
		return Task{}, err
	}
	if t.TaskType != fam.TaskType {
		return Task{}, fieldErr("task_type", "%q, but family %s has task type %s", t.TaskType, t.Family, fam.TaskType)
	}
	if t.Split, err = r.str("split", true); err != nil {
		return Task{}, err
	}
	if t.SourceID, err = r.str("source_id", false); err != nil {
		return Task{}, err
	}
	if t.Origin, err = r.str("origin", false); err != nil {
		return Task{}, err
	}
	if t.Prompt, err = r.str("prompt", false); err != nil {
		return Task{}, err
	}
	if t.Answers, err = r.answerList("answers"); err != nil {
		return Task{}, err
	}
	answer, err := r.answerList("answer")
	if err != nil {
		return Task{}, err
	}
	if len(t.Answers) == 0 {
		t.Answers = answer
	}
	if t.Options, err = r.strings("options"); err != nil {
		return Task{}, err
	}
	if r.present("prior_rate") {
		var p float64
		if err := json.Unmarshal(r["prior_rate"], &p); err != nil || p < 0 || p > 1 {
			return Task{}, fieldErr("prior_rate", "want a number in [0, 1], got %s", r["prior_rate"])
		}
		t.PriorRate = &p
	}
	if r.present("prior_count") {
		if err := json.Unmarshal(r["prior_count"], &t.PriorCount); err != nil || t.PriorCount < 0 {
			return Task{}, fieldErr("prior_count", "want a number >= 0, got %s", r["prior_count"])
		}
	}
	for k, v := range r {
		if !slices.Contains(rowFields, k) {
			if t.Extra == nil {
				t.Extra = map[string]json.RawMessage{}
			}
			// The canonical form (compact, HTML characters escaped) is what the Arrow
			// form stores, so a task reads back equal.
			canon, err := json.Marshal(v)
			if err != nil {
				return Task{}, fieldErr(k, "%v", err)
			}
			t.Extra[k] = canon
		}
	}
	t.Answers, t.Options = nonNil(t.Answers), nonNil(t.Options)
	if err := checkFamily(&t, fam); err != nil {
		return Task{}, err
	}
	return t, nil
}

// checkFamily checks what the family's grader and executor need from a row.
func checkFamily(t *Task, fam Family) error {
	if fam.Grading == KindEnvironment {
		if t.Family == "alfworld" {
			if t.Prompt != "" && t.Prompt != alfworldPrompt {
				return fieldErr("prompt", "ALFWorld rows carry null (the task is the reset observation)")
			}
			t.Prompt = alfworldPrompt
			var idx int
			if raw, ok := t.Extra["index"]; !ok || json.Unmarshal(raw, &idx) != nil {
				return fieldErr("index", "want the game's integer index")
			}
		}
		return nil
	}
	if t.Prompt == "" {
		return fieldErr("prompt", "missing or empty")
	}
	switch fam.Grading {
	case KindQA:
		if len(t.Answers) == 0 || slices.Contains(t.Answers, "") {
			return fieldErr("answer", "a QA row needs nonempty gold answers")
		}
	case KindChoice:
		if len(t.Options) == 0 {
			return fieldErr("options", "a multiple-choice row needs its option letters")
		}
		if len(t.Answers) != 1 || !slices.Contains(t.Options, t.Answers[0]) {
			return fieldErr("answer", "want one of the options %v, got %q", t.Options, t.Answers)
		}
	case KindInteger:
		if len(t.Answers) != 1 {
			return fieldErr("answer", "want one integer answer, got %q", t.Answers)
		}
		if _, err := strconv.ParseInt(t.Answers[0], 10, 64); err != nil {
			return fieldErr("answer", "want an integer, got %q", t.Answers[0])
		}
	case KindMath:
		if len(t.Answers) != 1 || t.Answers[0] == "" {
			return fieldErr("answer", "want one final answer, got %q", t.Answers)
		}
	case KindCode:
		var plus string
		if raw, ok := t.Extra["plus_test"]; !ok || json.Unmarshal(raw, &plus) != nil || plus == "" {
			return fieldErr("plus_test", "want the hidden test script")
		}
		var tests []string
		if raw, ok := t.Extra["test_list"]; !ok || json.Unmarshal(raw, &tests) != nil || len(tests) == 0 {
			return fieldErr("test_list", "want a nonempty list of test lines")
		}
		if raw, ok := t.Extra["test_imports"]; ok && string(raw) != "null" {
			var imports []string
			if json.Unmarshal(raw, &imports) != nil {
				return fieldErr("test_imports", "want a list of import lines")
			}
		}
	}
	return nil
}

// FormatJSONL is t as one JSONL row that ParseJSONL reads back equal (the row has no newline):
// the fields of rowFields ("kind" for the family, gold answers under "answers", prior_rate only
// when set) and the Extra fields, keys sorted.
func FormatJSONL(t Task) ([]byte, error) {
	r := map[string]any{}
	for k, v := range t.Extra {
		if slices.Contains(rowFields, k) {
			return nil, fmt.Errorf("task %s: extra field %q is a row field", t.ID, k)
		}
		r[k] = v
	}
	r["task_id"], r["kind"], r["task_type"], r["split"] = t.ID, t.Family, t.TaskType, t.Split
	r["source_id"], r["origin"], r["prompt"] = t.SourceID, t.Origin, t.Prompt
	r["answers"], r["options"] = nonNil(t.Answers), nonNil(t.Options)
	if t.PriorRate != nil {
		r["prior_rate"] = *t.PriorRate
	}
	r["prior_count"] = t.PriorCount
	return json.Marshal(r)
}
