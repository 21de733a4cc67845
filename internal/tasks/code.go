package tasks

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/evosteer/evosteer-go/internal/sandbox"
)

// MBPP+ pass@1 (METHOD.md §6.2; the release's curve_benchmarks._code_score): the program is
// extracted from the output (fences, the entry point, sanitising) by mbpp.py, which needs Python's
// own parser and so runs in the sandbox too. The release then runs candidate + test imports +
// hidden tests in one process and passes on its exit status and a printed sentinel, which the
// candidate can read, print, or reach by patching what the tests call. Here the verdict comes
// from a process the candidate never runs in: the probe (mbpp_probe.py, after the candidate, with
// the test inputs and no expected result) records what the entry point returns on each input as
// data; the judge (mbpp_judge.py: the tests' own setup, expected results and assertion, with no
// candidate code) compares those values and prints its sentinel last. So a program can pass only
// by returning the right values (docs/RELIABILITY.md).

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

// runHarness runs mbpp.py on a request and decodes its JSON reply. A harness that fails or
// times out on pathological output yields ok=false; a sandbox that cannot run is an error.
func (g *Graders) runHarness(ctx context.Context, request map[string]any, reply any) (bool, error) {
	payload, err := json.Marshal(request)
	if err != nil {
		return false, err
	}
	code := mbppHarness + "\nmain(" + fmt.Sprintf("%q", base64.StdEncoding.EncodeToString(payload)) + ")\n"
	res := g.sandbox.RunWith(ctx, code, CodeLimits(g.sandbox.Limits()))
	switch res.Status {
	case sandbox.StatusToolError:
		return false, fmt.Errorf("code extraction: %s", res.Error)
	case sandbox.StatusSuccess:
		if err := json.Unmarshal([]byte(lastLine(res.Stdout)), reply); err != nil {
			return false, fmt.Errorf("code extraction: reply %q: %w", lastLine(res.Stdout), err)
		}
		return true, nil
	}
	return false, nil
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

// hiddenTests is a plus_test split by mbpp.py's split_tests into the probe's and the judge's
// parts.
type hiddenTests struct {
	ProbeSetup string `json:"probe_setup"`
	Probe      string `json:"probe"`
	JudgeSetup string `json:"judge_setup"`
	JudgeLoop  string `json:"judge_loop"`
}

func (g *Graders) gradeCode(ctx context.Context, t Task, output string) (Score, error) {
	s := Score{Grader: GraderCode}
	var extracted struct {
		Source     string       `json:"source"`
		Parses     bool         `json:"parses"`
		Tests      *hiddenTests `json:"tests"`
		TestsError string       `json:"tests_error"`
	}
	ok, err := g.runHarness(ctx, map[string]any{"mode": "grade", "output": output,
		"plus_test": extraString(t, "plus_test"), "tests": extraStrings(t, "test_list")}, &extracted)
	if err != nil {
		return s, errorf(t, "%v", err)
	}
	s.Prediction = extracted.Source
	if ok && extracted.Tests == nil {
		return s, errorf(t, "hidden tests: %s", extracted.TestsError)
	}
	if !ok || !extracted.Parses {
		return s, nil
	}
	imports := strings.Join(extraStrings(t, "test_imports"), "\n")
	records, err := g.probe(ctx, extracted.Source, imports, extracted.Tests)
	if err != nil {
		return s, errorf(t, "hidden tests: %v", err)
	}
	passed, err := g.judge(ctx, imports, extracted.Tests, records)
	if err != nil {
		return s, errorf(t, "hidden tests: %v", err)
	}
	if passed {
		s.Reward = 1
	}
	return s, nil
}

// probe runs the candidate and then the entry point on every test input, and returns the
// records of what it returned (tagged lines of its standard output, one JSON object each). Its
// exit status says nothing: a program that stops early leaves records missing.
func (g *Graders) probe(ctx context.Context, source, imports string, tests *hiddenTests) (string, error) {
	tag := "evosteer-value-" + randomHex() + " "
	program := source + "\n\n" + imports + "\n" + tests.ProbeSetup + "\n" + mbppProbe +
		fmt.Sprintf("\n__evosteer_probe_all(lambda inp, i: (%s), inputs, %q)\n", tests.Probe, tag)
	res := g.sandbox.RunWith(ctx, program, CodeLimits(g.sandbox.Limits()))
	if res.Status == sandbox.StatusToolError {
		return "", fmt.Errorf("probe: %s", res.Error)
	}
	var records []string
	for _, line := range pySplitLines(res.Stdout) {
		if record, ok := strings.CutPrefix(line, tag); ok {
			records = append(records, record)
		}
	}
	return strings.Join(records, "\n"), nil
}

// judge runs the hidden tests' setup and loop on the recorded values, in a process of its own
// with no candidate code, and reports whether every assertion held.
func (g *Graders) judge(ctx context.Context, imports string, tests *hiddenTests, records string) (bool, error) {
	sentinel := "evosteer-tests-passed-" + randomHex()
	program := imports + "\n" + tests.JudgeSetup + "\n" + mbppJudge +
		fmt.Sprintf("\n__evosteer_load(%q)\n", base64.StdEncoding.EncodeToString([]byte(records))) +
		tests.JudgeLoop + "\nprint('\\n' + '" + sentinel + "')\n"
	res := g.sandbox.RunWith(ctx, program, CodeLimits(g.sandbox.Limits()))
	if res.Status == sandbox.StatusToolError {
		return false, fmt.Errorf("judge: %s", res.Error)
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
