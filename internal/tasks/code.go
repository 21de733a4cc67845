package tasks

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/evosteer/evosteer-go/internal/cpuslot"
	"github.com/evosteer/evosteer-go/internal/sandbox"
)

// MBPP+ pass@1 (METHOD.md §6.2; the release's curve_benchmarks._code_score): the program is
// extracted from the output (fences, the entry point, sanitising) by mbpp.py, which needs Python's
// own parser and so runs in the sandbox too. The release then runs candidate + test imports +
// hidden tests in one process and passes on its exit status and a printed sentinel, which the
// candidate can read, print, or reach by patching what the tests call. Here the verdict comes
// from a process the candidate never runs in: the probe (mbpp_probe.py, after the candidate, with
// the test inputs and no expected result) records what the entry point returns on each input as
// data; the judge (mbpp_judge.py: the tests' own setup and expected results, with no candidate
// code) compares those values as EvalPlus's evaluator does (its type, length and tolerance
// checks and its oracles of a few tasks, not the dataset's looser inline `assertion`) and prints
// its sentinel last. So a program can pass only by returning the right values
// (docs/RELIABILITY.md). What passes between the runs (request, reply, values) travels as files
// of the runs, never through their output, so no size a task file accepts cuts it.

//go:embed mbpp.py
var mbppHarness string

//go:embed mbpp_probe.py
var mbppProbe string

//go:embed mbpp_judge.py
var mbppJudge string

// CodeLimits are the limits of a hidden-test run (reference: RLIMIT_CPU 30 s, 4 GiB of address
// space, 8 MiB files, a 40 s timeout); open files and processes keep the sandbox's own.
func CodeLimits(base sandbox.Limits) sandbox.Limits {
	base.CPU, base.Wall, base.Memory, base.FileSize = 30*time.Second, 40*time.Second, 4<<30, 8<<20
	return base
}

// withFile is lim with room for one file of n bytes that the grader's own harness writes (the
// extraction's reply, the probe's values): the largest file may hold it, and the folder holds it
// besides the files a program may write under lim.
func withFile(lim sandbox.Limits, n int64) sandbox.Limits {
	disk := lim.Disk
	if disk == 0 {
		disk = sandbox.DiskFiles * lim.FileSize
	}
	lim.FileSize, lim.Disk = max(lim.FileSize, n), disk+n
	return lim
}

// The files of a grade's runs: the extraction's request and reply, the values the probe records.
const (
	requestFile = "request.json"
	replyFile   = "reply.json"
	valuesFile  = "values.jsonl"
)

// runHarness runs mbpp.py on a request and decodes its JSON reply. Request and reply travel as
// files of the run, not through its output (of which the sandbox keeps the first and last MiB),
// so an output or hidden tests of any size a task file accepts are graded whole: the reply
// echoes the program and the hidden tests' parts, so its file may hold a few times the request
// (JSON escapes, ast.unparse spacing). A harness that fails or times out on pathological
// output yields ok=false; a sandbox that cannot run, or a reply that is missing or not JSON, is
// an error, which quotes no more than an excerpt.
// runFiles runs a program of a code grade, giving the CPU slot that ctx holds (an episode's,
// internal/cpuslot) back while the run waits for its turn and while the program runs, as a
// request waiting on a server does: the programs at once are bounded by the sandbox's own
// concurrency and memory total (tools.python.concurrency, memory_total_mb), not by the
// episodes' slots.
func (g *Graders) runFiles(ctx context.Context, code string, lim sandbox.Limits, files sandbox.Files) sandbox.Result {
	defer cpuslot.Wait(ctx)()
	return g.sandbox.RunFiles(ctx, code, lim, files)
}

func (g *Graders) runHarness(ctx context.Context, request map[string]any, reply any) (bool, error) {
	payload, err := json.Marshal(request)
	if err != nil {
		return false, err
	}
	lim := withFile(CodeLimits(g.sandbox.Limits()), 8<<20+4*int64(len(payload)))
	res := g.runFiles(ctx, mbppHarness+"\nmain()\n", lim,
		sandbox.Files{In: map[string][]byte{requestFile: payload}, Out: []string{replyFile}})
	switch res.Status {
	case sandbox.StatusToolError:
		return false, fmt.Errorf("code extraction: %s", clip(res.Error))
	case sandbox.StatusSuccess:
		data, ok := res.Files[replyFile]
		if !ok {
			return false, fmt.Errorf("code extraction wrote no reply (standard error ends %s)", quoteClip(lastLine(res.Stderr)))
		}
		if err := json.Unmarshal(data, reply); err != nil {
			return false, fmt.Errorf("code extraction: reply %s: %s", quoteClip(string(data)), clip(err.Error()))
		}
		return true, nil
	}
	return false, nil
}

// clipBytes is the most of a text from a run (a reply, an output, a sandbox error) that an error
// message quotes: a grade's error stays one short line whatever the run printed.
const clipBytes = 240

// clip is s, or its first clipBytes bytes (whole characters) and a note of its full length.
func clip(s string) string {
	if len(s) <= clipBytes {
		return s
	}
	cut := clipBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [%d bytes in all]", len(s))
}

// quoteClip is clip of s, quoted (so that control characters stay on one line).
func quoteClip(s string) string {
	if len(s) <= clipBytes {
		return fmt.Sprintf("%q", s)
	}
	short := clip(s)
	note := strings.LastIndex(short, "… [")
	return fmt.Sprintf("%q", short[:note]) + short[note:]
}

func lastLine(s string) string {
	lines := pySplitLines(s)
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}

func extraString(t Task, key string) string {
	var s string
	_ = json.Unmarshal(t.Extra[key], &s)
	return s
}

func extraStrings(t Task, key string) []string {
	var ss []string
	_ = json.Unmarshal(t.Extra[key], &ss)
	return ss
}

// hiddenTests is a plus_test split by mbpp.py's split_tests: its setup in runs of statements
// (marked where they assign the expected results, which the probe's process never holds), the
// probe's expression and the judge's loop.
type hiddenTests struct {
	Setup []struct {
		Code     string `json:"code"`
		Expected bool   `json:"expected"`
	} `json:"setup"`
	Probe string `json:"probe"`
	Loop  string `json:"loop"`
}

// setup is the setup for the probe (withExpected false: no expected result) or the judge.
func (h *hiddenTests) setup(withExpected bool) string {
	var parts []string
	for _, part := range h.Setup {
		if withExpected || !part.Expected {
			parts = append(parts, part.Code)
		}
	}
	return strings.Join(parts, "\n")
}

// evalPlusOracle is the name of the check mbpp_judge.py applies to a task whose results EvalPlus
// does not compare as they are (evalplus/eval/_special_oracle.py and unsafe_execute, at
// v0.3.1-44-g26d6d00): "" for every other task. EvalPlus names them by entry point; here the
// MBPP task id picks one, and only for the entry point EvalPlus names for that id.
func evalPlusOracle(t Task, entry string) string {
	id := t.SourceID
	if id == "" {
		id = t.ID[strings.LastIndex(t.ID, "/")+1:]
		id = strings.TrimPrefix(id, "test-")
	}
	if i := strings.LastIndex(id, "/"); i >= 0 { // "Mbpp/2"
		id = id[i+1:]
	}
	n, err := strconv.Atoi(id)
	if err != nil {
		return ""
	}
	if o, ok := evalPlusOracles[n]; ok && o.entry == entry {
		return o.check
	}
	return ""
}

// evalPlusOracles are the MBPP tasks with an oracle of their own in EvalPlus, by task id.
var evalPlusOracles = map[int]struct{ entry, check string }{
	// The items may come in any order: a set of the value equals a set of the expected one.
	2: {"similar_elements", "set"}, 7: {"find_char_long", "set"}, 111: {"common_in_nested_lists", "set"},
	140: {"extract_singly", "set"}, 232: {"larg_nnum", "set"}, 249: {"intersection_array", "set"},
	579: {"find_dissimilar", "set"}, 769: {"Diff", "set"},
	// A regular-expression match: the expected value is whether the reference found one.
	737: {"check_str", "not_none"}, 787: {"text_match_three", "not_none"}, 794: {"text_starta_endb", "not_none"},
	164: {"are_equivalent", "any"},                 // any value that is returned passes
	295: {"sum_div", "or_zero"},                    // 0 passes too
	558: {"digit_distance_nums", "digit_distance"}, // or the digit distance of zero-padded numbers
	581: {"surface_Area", "pyramid_area"},          // or the rounded area of a pyramid of that height
}

func (g *Graders) gradeCode(ctx context.Context, t Task, output string) (Score, error) {
	s := Score{Grader: GraderCode}
	var extracted struct {
		Entry      string       `json:"entry"`
		Source     string       `json:"source"`
		Parses     bool         `json:"parses"`
		Tests      *hiddenTests `json:"tests"`
		TestsError string       `json:"tests_error"`
	}
	plus := extraString(t, "plus_test")
	ok, err := g.runHarness(ctx, map[string]any{"mode": "grade", "output": output,
		"plus_test": plus, "tests": extraStrings(t, "test_list")}, &extracted)
	if err != nil {
		return s, errorf(t, "%v", err)
	}
	s.Prediction = extracted.Source
	if ok && extracted.Tests == nil {
		return s, errorf(t, "hidden tests: %s", clip(extracted.TestsError))
	}
	if !ok || !extracted.Parses {
		return s, nil
	}
	imports := strings.Join(extraStrings(t, "test_imports"), "\n")
	values, err := g.probe(ctx, extracted.Source, imports, extracted.Tests, len(plus))
	if err != nil {
		return s, errorf(t, "hidden tests: %v", err)
	}
	passed, err := g.judge(ctx, imports, extracted.Tests, evalPlusOracle(t, extracted.Entry), values)
	if err != nil {
		return s, errorf(t, "hidden tests: %v", err)
	}
	if passed {
		s.Reward = 1
	}
	return s, nil
}

// probe runs the candidate and then the entry point on every test input, and returns the
// records of what it returned (a file of the run, one JSON object a line, read back whole; its
// file may hold several times the hidden tests, whose expected results bound an honest answer's
// values). Its exit status says nothing: a program that stops early leaves records missing.
func (g *Graders) probe(ctx context.Context, source, imports string, tests *hiddenTests, plusBytes int) ([]byte, error) {
	program := source + "\n\n" + imports + "\n" + tests.setup(false) + "\n" + mbppProbe +
		fmt.Sprintf("\n__evosteer_probe_all(lambda inp, i: (%s), inputs, %q)\n", tests.Probe, valuesFile)
	lim := withFile(CodeLimits(g.sandbox.Limits()), 8<<20+8*int64(plusBytes))
	res := g.runFiles(ctx, program, lim, sandbox.Files{Out: []string{valuesFile}})
	if res.Status == sandbox.StatusToolError {
		return nil, fmt.Errorf("probe: %s", clip(res.Error))
	}
	return res.Files[valuesFile], nil
}

// judge runs the hidden tests' setup and loop, with EvalPlus's checks and the task's oracle, on
// the recorded values, in a process of its own with no candidate code, and reports whether
// every check held.
func (g *Graders) judge(ctx context.Context, imports string, tests *hiddenTests, oracle string, values []byte) (bool, error) {
	sentinel := "evosteer-tests-passed-" + randomHex()
	program := imports + "\n" + tests.setup(true) + "\n" + mbppJudge +
		fmt.Sprintf("\n__evosteer_load(%q, %q)\n", valuesFile, oracle) +
		tests.Loop + "\nprint('\\n' + '" + sentinel + "')\n"
	res := g.runFiles(ctx, program, CodeLimits(g.sandbox.Limits()), sandbox.Files{In: map[string][]byte{valuesFile: values}})
	if res.Status == sandbox.StatusToolError {
		return false, fmt.Errorf("judge: %s", clip(res.Error))
	}
	return res.Status == sandbox.StatusSuccess && lastLine(res.Stdout) == sentinel, nil
}

func randomHex() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// TestedProgram returns the program to append to a code task's final output when the output
// does not define the entry point but a successful python tool program did (reference
// curve_tools.tested_program): the last such program, sanitised; "" when there is none.
func (g *Graders) TestedProgram(ctx context.Context, t Task, output string, programs []string) (string, error) {
	if len(programs) == 0 {
		return "", nil
	}
	if g.sandbox == nil {
		return "", errorf(t, "code tasks need the python sandbox")
	}
	var reply struct {
		Program *string `json:"program"`
	}
	ok, err := g.runHarness(ctx, map[string]any{"mode": "tested_program", "prompt": t.Prompt, "output": output,
		"programs": programs}, &reply)
	if err != nil || !ok || reply.Program == nil {
		return "", err
	}
	return *reply.Program, nil
}
