package evosteer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The module's floors, top to bottom (docs/ARCHITECTURE.md §2.1):
//
//	7 cmd/            the commands: the CLI
//	6 comparisons     a driver: the comparison study, variants × seeds of whole runs;
//	                  comparisons/admission, the admission study (Monte Carlo of the ledger)
//	5 pipeline        a driver: creating a run, the stages of a step in order
//	4 stages/<name>   one package per stage
//	3 play            playing and learning on top of the models: internal/episode, learner,
//	                  exact, paradigms, calibrate, runtest
//	2 learning        gpu: the models, the objectives, the update
//	1 domain          the environment, policies, executors, tasks, skills, configuration, the
//	                  run folder, DuckDB
//	0 foundation      schema, sql, the embedded pipeline.yaml (this package) and the leaves
//
// A package imports only from its own floor and the floors below; a stage, a driver or a command
// only from the floors below (stages share no code with each other: what two stages both need
// lives below them, e.g. internal/episode plays episodes for rollout, evaluate and probe). A
// stage's tests may import other stages and the pipeline, as fixtures that build the run folder
// the stage reads; a lower package's tests may not. Every package sits on a floor: a new one
// must be placed in floors below.
//
// The other rules are the import-shaped "must not"s of the packages' doc.go files.

const module = "github.com/evosteer/evosteer-go"

// listed is what `go list -json` says of one package (the fields the rules read).
type listed struct {
	ImportPath   string
	GoFiles      []string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// forbid is a rule: the packages under pkg must not import those under any of imports.
type forbid struct {
	pkg     string
	imports []string
	why     string
}

// testOnly are the packages of test fixtures, which only tests may import (and cmd/fake-engine,
// which serves the fake engine for `make served-demo`); internal/tokenizer/tokenizertest runs the
// tokenizer's oracle; gpu/qwen3/qwen3test writes tiny random model folders.
var testOnly = []string{"internal/runtest", "internal/executor/scoring/fakeengine", "internal/tokenizer/tokenizertest", "gpu/qwen3/qwen3test"}

// forbidden are the doc.go rules about imports, and those of issue 18 (leaves).
var forbidden = []forbid{
	{"internal/tasks", []string{"internal/orchestra", "internal/executor", "internal/sim", "internal/episode"},
		"tasks must not run agents or know about the orchestration graph"},
	{"internal/orchestra", []string{"internal/policy", "gpu", "internal/episode"},
		"orchestra must not choose actions (that is the policy's job)"},
	{"internal/policy", []string{"gpu", "internal/learner", "internal/executor", "internal/sim", "internal/episode", "internal/rundir"},
		"policy must not execute actions, touch files, or hold learned weights"},
	{"internal/executor", []string{"internal/orchestra"},
		"an executor must not decide anything about the graph or the budget (it reads texts with internal/textrules)"},
	{"gpu", []string{"schema", "internal/rundir", "internal/learner"}, "gpu must not read or write pipeline files"},
	{"internal/sim", []string{"gpu", "internal/learner", "internal/rundir"}, "sim must not read learning outputs"},
	{"internal/stats", []string{"internal/duck", "internal/rundir", "schema"}, "stats must not read files or import DuckDB"},
	{"internal/arrowfmt", []string{"internal/duck", "internal/rundir"}, "arrowfmt must not read files or run queries"},
	{"internal/exact", []string{"internal/rundir", "internal/learner"}, "exact must not read or write run folders"},
	{"internal/calibrate", []string{"internal/rundir", "internal/learner", "gpu", "stages"}, "calibrate must not read or write run folders, learn anything, or import a stage"},
	{"internal/paradigms", []string{"gpu", "internal/learner", "internal/rundir", "schema"},
		"paradigms must not learn, read or write files"},
	{"internal/skills", []string{"internal/episode", "internal/executor"}, "skills must not roll anything out or call an author"},
	{"internal/episode", []string{"internal/rundir", "internal/learner"}, "episode must not read or write files or learn anything"},
	{"internal/probetable", []string{"internal/episode", "internal/executor"}, "probetable must not play episodes"},
	{"internal/doctor", []string{"internal/rundir", "schema", "internal/episode", "internal/learner"},
		"doctor must not read or write run folders or play episodes (it checks the services a run would use)"},
	{"stages/aggregate", []string{"internal/episode"}, "aggregate must not roll anything out"},
	{"stages/update", []string{"internal/episode"}, "update must not roll anything out"},
	{"stages/validate", []string{"internal/episode"}, "validate must not roll anything out"},
	{"stages/author", []string{"internal/episode"}, "author must not roll anything out"},
}

// leaves import no other project package (their doc.go files say so).
var leaves = []string{"internal/textrules", "internal/sandbox", "internal/atomicfile", "internal/paper", "internal/figure", "internal/actiontrie", "internal/cpuslot", "internal/tokenizer", "internal/mapfile"}

// schemaMayImport is what schema imports of the project (schema/doc.go).
var schemaMayImport = []string{"internal/atomicfile", "internal/mapfile"}

// gomlxModules are gomlx's modules, which only gpu/ imports: gomlx itself, its backends' API and
// Go backend (compute), and its XLA backend (go-xla).
var gomlxModules = []string{"github.com/gomlx/gomlx", "github.com/gomlx/compute", "github.com/gomlx/go-xla"}

// under reports whether path is pkg or a package below it (both relative to the module).
func under(path, pkg string) bool { return path == pkg || strings.HasPrefix(path, pkg+"/") }

// Floor numbers of floors (above), for the rules that name them.
const (
	floorStages   = 4
	floorPipeline = 5
)

// floors places every module package (relative path; "." is the module's root package) on its
// floor; a package under a listed folder shares its floor.
var floors = map[int][]string{
	0: {".", "schema", "sql", "internal/layout", "internal/atomicfile", "internal/seed", "internal/sandbox",
		"internal/textrules", "internal/redact", "internal/stats", "internal/arrowfmt", "internal/executor/search", "internal/paper", "internal/figure",
		"internal/actiontrie", "internal/cpuslot", "internal/tokenizer", "internal/mapfile"},
	1: {"internal/config", "internal/tasks", "internal/executor", "internal/orchestra", "internal/policy", "internal/sim",
		"internal/rundir", "internal/duck", "internal/skills", "internal/probetable", "internal/doctor"},
	2: {"gpu"},
	3: {"internal/episode", "internal/learner", "internal/exact", "internal/paradigms", "internal/calibrate", "internal/runtest"},
	4: {"stages"},
	5: {"pipeline"},
	6: {"comparisons"},
	7: {"cmd"},
}

// floor is the floor of a module package (relative path), −1 for one on no floor, and whether it
// is a stage. The most specific listed folder wins (internal/executor/search is below
// internal/executor).
func floor(rel string) (int, bool) {
	best, at := -1, ""
	for f, pkgs := range floors {
		for _, p := range pkgs {
			if (under(rel, p) || p == "." && rel == ".") && len(p) > len(at) {
				best, at = f, p
			}
		}
	}
	return best, best == floorStages
}

// rel is path relative to the module, or "" for a package outside it.
func rel(path string) string {
	if path == module {
		return "."
	}
	r, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return ""
	}
	return r
}

// violations checks every rule on the listed packages of the module.
func violations(pkgs []listed) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, p := range pkgs {
		self := rel(p.ImportPath)
		if self == "" {
			continue
		}
		height, stage := floor(self)
		if height < 0 {
			bad("%s is on no floor: place it in layering_test.go's floors and docs/ARCHITECTURE.md §2.1", self)
			continue
		}
		tests := slices.Concat(p.TestImports, p.XTestImports)
		check := func(imp string, test bool) {
			kind := "imports"
			if test {
				kind = "tests import"
			}
			if under(imp, "github.com/duckdb") || under(imp, "github.com/marcboeker/go-duckdb") {
				if self != "internal/duck" {
					bad("%s %s %s: only internal/duck imports DuckDB", self, kind, imp)
				}
			}
			// gomlx and, since v0.28, its backends: github.com/gomlx/compute (the Go backend,
			// dtypes, shapes) and github.com/gomlx/go-xla (XLA).
			if slices.ContainsFunc(gomlxModules, func(m string) bool { return under(imp, m) }) && !under(self, "gpu") {
				bad("%s %s %s: only gpu/ imports gomlx", self, kind, imp)
			}
			target := rel(imp)
			if target == "" || target == self {
				return
			}
			h, isStage := floor(target)
			switch {
			case !test && stage && isStage:
				bad("%s imports %s: a stage does not import another stage", self, target)
			case !test && (h > height || h == height && height >= floorStages):
				bad("%s imports %s: a package imports only from the floors below its own (floor %d imports floor %d)", self, target, height, h)
			case test && h >= floorStages && height < floorStages:
				bad("%s tests import %s: only a stage's tests build fixtures with stages or the pipeline", self, target)
			case test && h > height && !(stage && h == floorPipeline):
				bad("%s tests import %s: tests import from the floors below (a stage's also other stages and the pipeline)", self, target)
			}
			if test {
				return // the rules below are about what a package is built from
			}
			if slices.Contains(testOnly, target) && !(self == "cmd/fake-engine" && target == "internal/executor/scoring/fakeengine") {
				bad("%s imports %s: it is only for tests", self, target)
			}
			if self == "schema" && !slices.Contains(schemaMayImport, target) {
				bad("schema imports %s: schema imports no project package but %v", target, schemaMayImport)
			}
			if slices.Contains(leaves, self) {
				bad("%s imports %s: it is a leaf (no project imports)", self, target)
			}
			for _, f := range forbidden {
				for _, no := range f.imports {
					if under(self, f.pkg) && under(target, no) {
						bad("%s imports %s: %s", self, target, f.why)
					}
				}
			}
		}
		for _, imp := range p.Imports {
			check(imp, false)
		}
		for _, imp := range tests {
			check(imp, true)
		}
		if self == "sql" {
			for _, f := range p.GoFiles {
				if f != "doc.go" && f != "embed.go" {
					bad("sql holds %s: the folder holds no Go logic, only the embedding in embed.go", f)
				}
			}
		}
	}
	return out
}

// list runs `go list -json` on the module's packages (with the build tag of every build).
func list(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", "-tags", "duckdb_arrow", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: run from the module root", len(pkgs))
	}
	return pkgs
}

// TestLayering checks the module's imports against the floors and the doc.go rules.
func TestLayering(t *testing.T) {
	for _, v := range violations(list(t)) {
		t.Error(v)
	}
}

// The checker finds each kind of violation (so a clean TestLayering means something).
func TestLayeringCatchesViolations(t *testing.T) {
	p := func(path string, imports ...string) listed {
		for i, imp := range imports {
			if !strings.Contains(imp, ".") {
				imports[i] = module + "/" + imp
			}
		}
		return listed{ImportPath: module + "/" + path, Imports: imports}
	}
	for _, c := range []struct {
		pkg  listed
		want string
	}{
		{p("stages/probe", "stages/evaluate"), "a stage does not import another stage"},
		{p("internal/tasks", "gpu"), "floors below its own"},
		{p("gpu", "internal/episode"), "floors below its own"},
		{p("internal/config", "internal/learner"), "floors below its own"},
		{p("internal/stats", "internal/config"), "floors below its own"},
		{p("internal/brand-new"), "on no floor"},
		{p("internal/paradigms", "stages/rollout"), "floors below its own"},
		{p("gpu", "pipeline"), "floors below its own"},
		{p("stages/report", "comparisons"), "floors below its own"},
		{p("pipeline", "comparisons"), "floors below its own"},
		{p("internal/orchestra", "github.com/gomlx/gomlx/core/graph"), "only gpu/ imports gomlx"},
		{p("internal/orchestra", "github.com/gomlx/compute"), "only gpu/ imports gomlx"},
		{p("stages/update", "github.com/gomlx/compute/gobackend"), "only gpu/ imports gomlx"},
		{p("internal/learner", "github.com/gomlx/go-xla/compute/xla"), "only gpu/ imports gomlx"},
		{p("stages/aggregate", "github.com/duckdb/duckdb-go/v2"), "only internal/duck imports DuckDB"},
		{p("schema", "internal/layout"), "schema imports no project package"},
		{p("internal/textrules", "internal/seed"), "leaf"},
		{p("internal/executor/openai", "internal/orchestra"), "must not decide anything about the graph"},
		{p("stages/rollout", "internal/runtest"), "only for tests"},
		{p("internal/executor/scoring", "internal/executor/scoring/fakeengine"), "only for tests"},
		{listed{ImportPath: module + "/internal/skills", TestImports: []string{module + "/stages/rollout"}}, "only a stage's tests"},
		{listed{ImportPath: module + "/sql", GoFiles: []string{"embed.go", "query.go"}}, "no Go logic"},
	} {
		got := violations([]listed{c.pkg})
		if len(got) != 1 || !strings.Contains(got[0], c.want) {
			t.Errorf("%s importing %v: violations %q, want one saying %q", c.pkg.ImportPath, c.pkg.Imports, got, c.want)
		}
	}
	fixture := listed{ImportPath: module + "/stages/update", TestImports: []string{module + "/stages/rollout", module + "/pipeline"}}
	allowed := []listed{p("stages/probe", "internal/episode", "internal/probetable"), p("gpu", "github.com/gomlx/gomlx/core/graph", "github.com/gomlx/compute/gobackend", "github.com/gomlx/go-xla/compute/xla"), p("pipeline", "stages/rollout"), p("cmd/evosteer", "comparisons"), fixture}
	if got := violations(allowed); len(got) != 0 {
		t.Errorf("allowed imports reported: %q", got)
	}
}
