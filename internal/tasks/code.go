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
// own parser and so runs in the sandbox too; then candidate + test imports + hidden tests + a line
// printing a random sentinel run in the sandbox. The task passes iff the run exits 0 and the
// last line it prints is the sentinel, so a candidate that exits early or prints a fake pass
// line does not pass.

//go:embed mbpp.py
var mbppHarness string

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

func (g *Graders) gradeCode(ctx context.Context, t Task, output string) (Score, error) {
	s := Score{Grader: GraderCode}
	var extracted struct {
		Source string `json:"source"`
		Parses bool   `json:"parses"`
	}
	ok, err := g.runHarness(ctx, map[string]any{"mode": "grade", "output": output,
		"plus_test": extraString(t, "plus_test"), "tests": extraStrings(t, "test_list")}, &extracted)
	if err != nil {
		return s, errorf(t, "%v", err)
	}
	s.Prediction = extracted.Source
	if !ok || !extracted.Parses {
		return s, nil
	}
	sentinel := "evosteer-tests-passed-" + randomHex()
	program := extracted.Source + "\n\n" + strings.Join(extraStrings(t, "test_imports"), "\n") + "\n" +
		extraString(t, "plus_test") + "\nprint('\\n' + '" + sentinel + "')\n"
	res := g.sandbox.RunWith(ctx, program, CodeLimits(g.sandbox.Limits()))
	if res.Status == sandbox.StatusToolError {
		return s, errorf(t, "hidden tests: %s", res.Error)
	}
	if res.Status == sandbox.StatusSuccess && lastLine(res.Stdout) == sentinel {
		s.Reward = 1
	}
	return s, nil
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
