package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// floatTask is an MBPP+ task whose hidden tests use the benchmark's own assertion helper
// (np.allclose for float results), the shape of every real plus_test.
func floatTask(t *testing.T) Task {
	t.Helper()
	plus := datasetHeader + `
inputs = [[1.0], [2.5], [-4.0], [inf], [0.1]]
results = [0.5, 1.25, -2.0, inf, 0.05]
for i, (inp, exp) in enumerate(zip(inputs, results)):
    assertion(half(*inp), exp, 0)
`
	return codeTask(t, "mbpp_plus/half", "", plus, "assert half(1.0) == 0.5")
}

// datasetHeader is the head of every real MBPP+ plus_test: numpy, inf, and the dataset's inline
// is_floats and assertion helpers.
const datasetHeader = `import numpy as np
from math import inf

def is_floats(x) -> bool:
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)):
        return all(isinstance(i, float) for i in x)
    if isinstance(x, np.ndarray):
        return x.dtype == np.float64 or x.dtype == np.float32
    return False


def assertion(out, exp, atol):
    if atol == 0 and is_floats(exp):
        atol = 1e-6
    if out != exp and atol != 0:
        assert np.allclose(out, exp, rtol=1e-07, atol=atol)
    else:
        assert out == exp, f"out: {out}, exp: {exp}"

`

// codeTask is an MBPP+ task of the given ids, hidden tests and one visible test.
func codeTask(t *testing.T, id, sourceID, plus, visible string) Task {
	t.Helper()
	raw := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return Task{ID: id, SourceID: sourceID, Family: "mbpp_plus", TaskType: "mbpp_plus", Split: "train",
		Prompt: "Write the function.\nYour code should pass this test:\n" + visible,
		Extra: map[string]json.RawMessage{"plus_test": raw(plus), "test_imports": raw([]string{}),
			"test_list": raw([]string{visible})}}
}

// fence wraps a program as an agent's final answer.
func fence(program string) string { return "```python\n" + program + "\n```" }

// readsSentinel is a class body (it runs when the class is defined, and survives the code
// cleaner) that finds the harness's pass marker in the program it runs in.
const readsSentinel = `import os, re, sys

class Probe:
    text = open(sys.argv[0] if sys.argv and sys.argv[0].endswith('.py') else 'main.py').read()
    marker = re.findall(r"evosteer-tests-passed-[0-9a-f]+", text)
`

// TestCodeGraderTricksScoreZero holds one case per known way a program can make the hidden
// tests look passed without computing the right answers; each wrong function must score 0 and
// each honest one 1 (the last two cases), so the verdict is the tests', not the program's.
func TestCodeGraderTricksScoreZero(t *testing.T) {
	sb := testSandbox(t)
	requireNumpy(t, sb)
	g := NewGraders(sb)
	ints, floats := fixtureTask(t, "mbpp_plus/f6"), floatTask(t)
	cases := []struct {
		name   string
		task   Task
		output string
		want   float64
	}{
		{"reads the marker from the harness, prints it and exits early", ints, fence(readsSentinel + `    if marker:
        print(marker[-1])
        os._exit(0)

def add_two(a, b):
    return 0`), 0},
		{"reads the expected results from the harness", ints, fence(`import sys

class Probe:
    text = open('main.py').read()
    line = [l for l in text.splitlines() if l.startswith('results = ')]
    expected = iter(eval(line[-1][len('results = '):]) if line else [])

def add_two(a, b):
    return next(Probe.expected, 0)`), 0},
		{"exits with status 0 while being defined", ints, fence(`import os

class Probe:
    os._exit(0)

def add_two(a, b):
    return 0`), 0},
		{"prints the marker and raises SystemExit inside a test", ints, fence(readsSentinel + `
def add_two(a, b):
    print(Probe.marker[-1] if Probe.marker else 'evosteer-tests-passed-0')
    raise SystemExit(0)`), 0},
		{"returns an object equal to everything", ints, fence(`class Anything:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = object.__hash__

def add_two(a, b):
    return Anything()`), 0},
		{"returns an int subclass equal to everything", ints, fence(`class Anything(int):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = int.__hash__

def add_two(a, b):
    return Anything(0)`), 0},
		{"patches numpy.allclose", floats, fence(`import numpy

class Probe:
    numpy.allclose = lambda *args, **kwargs: True

def half(x):
    return x + 1.0`), 0},
		{"patches sys.excepthook and atexit to print the marker", ints, fence(readsSentinel + `    def hook(*args):
        print(Probe.marker[-1] if Probe.marker else '')
        os._exit(0)
    sys.excepthook = hook
    import atexit
    atexit.register(hook)

def add_two(a, b):
    return 0`), 0},
		{"patches builtins and the assertion helper", ints, fence(`import builtins

class Probe:
    builtins.AssertionError = type('Quiet', (Exception,), {})
    builtins.assertion = lambda *args: None
    builtins.zip = lambda *args: iter(())
    builtins.enumerate = lambda *args: iter(())

def add_two(a, b):
    return 0`), 0},
		{"honest integers", ints, fence("def add_two(a, b):\n    return a + b"), 1},
		{"honest floats within the tolerance, printing as it goes", floats, fence("def half(x):\n    print('halving', x)\n    return x / 2 + 1e-9"), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := g.Grade(context.Background(), c.task, c.output)
			if err != nil || s.Reward != c.want {
				t.Fatalf("reward %v, want %v (%v); prediction:\n%s", s.Reward, c.want, err, s.Prediction)
			}
			if strings.TrimSpace(s.Prediction) == "" {
				t.Fatalf("no prediction recorded")
			}
		})
	}
}

// plusTask is an MBPP+ task of entry point f with the benchmark's strict assertion helper.
func plusTask(t *testing.T, inputs, results, loop string) Task {
	t.Helper()
	x := floatTask(t)
	plus := "import numpy as np\n\ndef assertion(out, exp, atol):\n    if out != exp and atol != 0:\n" +
		"        assert np.allclose(out, exp, rtol=1e-07, atol=atol)\n    else:\n        assert out == exp\n\n" +
		"inputs = " + inputs + "\nresults = " + results + "\n" + loop
	b, err := json.Marshal(plus)
	if err != nil {
		t.Fatal(err)
	}
	x.ID, x.Extra["plus_test"] = "mbpp_plus/values", b
	return x
}

// TestCodeGraderKeepsValuesExact holds the comparison the tests make to the values the candidate
// returns: types as Python compares them (a list is not a tuple, 1.0 equals 1), containers,
// bytes, complex, big integers, NaN and numpy arrays arrive at the judge as they left.
func TestCodeGraderKeepsValuesExact(t *testing.T) {
	sb := testSandbox(t)
	requireNumpy(t, sb)
	g := NewGraders(sb)
	loop := "for i, (inp, exp) in enumerate(zip(inputs, results)):\n    assertion(half(*inp), exp, 0)\n"
	cases := []struct {
		name, inputs, results, body string
		want                        float64
	}{
		{"nested containers", "[[1], [2]]", "[((1, [1]), {1: {'a'}}, frozenset({1})), ((2, [2]), {2: {'a'}}, frozenset({2}))]",
			"return ((x, [x]), {x: {'a'}}, frozenset({x}))", 1},
		{"a list where a tuple is expected", "[[1]]", "[(1, 2)]", "return [x, x + 1]", 0},
		{"an int where a float is expected", "[[2]]", "[2.0]", "return x", 1},
		{"bytes, complex, a big integer", "[[3]]", "[(b'\\x00\\xff', 1+2j, 10**40)]", "return (bytes([0, 255]), complex(1, 2), 10**40)", 1},
		{"numpy scalars", "[[4]]", "[[4, 5]]", "import numpy\n    return [numpy.int64(x), numpy.array([5])[0]]", 1},
		{"a numpy array against a list", "[[5]]", "[[5.0, 6.0]]", "import numpy\n    return numpy.array([5.0, 6.0])", 0},
		{"a generator where a list is expected", "[[6]]", "[[6]]", "return (y for y in [x])", 0},
		{"fewer values than tests", "[[7], [8]]", "[7, 8]", "if x == 8:\n        raise SystemExit(0)\n    return x", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := plusTask(t, c.inputs, c.results, loop)
			s, err := g.Grade(context.Background(), task, fence("def half(x):\n    "+c.body))
			if err != nil || s.Reward != c.want {
				t.Fatalf("reward %v, want %v (%v)", s.Reward, c.want, err)
			}
		})
	}
	odd := plusTask(t, "[[1]]", "[1]", "for inp, exp in zip(inputs, results):\n    assert half(*inp) == exp\n")
	_, err := g.Grade(context.Background(), odd, fence("def half(x):\n    return x"))
	if err == nil || !strings.Contains(err.Error(), "mbpp_plus/values") || !strings.Contains(err.Error(), "plus_test's loop is not") {
		t.Fatalf("a plus_test of another shape: %v", err)
	}
}

// loopOf is the one test loop of a plus_test, calling entry on each input.
func loopOf(entry string) string {
	return "for i, (inp, exp) in enumerate(zip(inputs, results)):\n    assertion(" + entry + "(*inp), exp, 0)\n"
}

// TestCodeGraderJudgesAsEvalPlus holds the checks of EvalPlus's evaluator, which the judge
// applies instead of the dataset's inline assertion: where a float is expected, a value of
// another type (an empty list, tuple or array, which numpy.allclose broadcasts against any
// scalar) or a list of another length fails; equality or the tolerance passes; and a task with an
// oracle of its own in EvalPlus is judged by it (picked by the MBPP task id, for the entry point
// EvalPlus names).
func TestCodeGraderJudgesAsEvalPlus(t *testing.T) {
	sb := testSandbox(t)
	requireNumpy(t, sb)
	g := NewGraders(sb)
	floats := floatTask(t)
	floatLists := codeTask(t, "mbpp_plus/halves", "", datasetHeader+"inputs = [[1.0], [3.0]]\nresults = [[0.5], [1.5]]\n"+loopOf("halves"),
		"assert halves(1.0) == [0.5]")
	sets := func(sourceID string) Task {
		return codeTask(t, "mbpp_plus/test-"+sourceID, sourceID, datasetHeader+
			"inputs = [[(3, 4, 5, 6), (5, 7, 4, 10)], [(1, 2, 3, 4), (5, 4, 3, 7)]]\nresults = [(4, 5), (3, 4)]\n"+loopOf("similar_elements"),
			"assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))")
	}
	// The dataset's helper of the three regular-expression tasks computes its check and never
	// asserts it.
	inert := strings.Replace(datasetHeader, "    if out != exp", "    exact_match = exp == (out is not None)\n    return\n    if out != exp", 1)
	matches := codeTask(t, "mbpp_plus/test-737", "737", inert+"inputs = [['annie'], ['dawood'], ['Else']]\nresults = [True, False, True]\n"+loopOf("check_str"),
		"assert check_str(\"annie\")")
	cases := []struct {
		name   string
		task   Task
		output string
		want   float64
	}{
		{"an empty list where a float is expected", floats, "def half(x):\n    return []", 0},
		{"an empty tuple where a float is expected", floats, "def half(x):\n    return ()", 0},
		{"a list of an empty list where a float is expected", floats, "def half(x):\n    return [[]]", 0},
		{"an empty numpy array where a float is expected", floats, "import numpy\n\ndef half(x):\n    return numpy.zeros(0)", 0},
		{"a list of another length where a list of floats is expected", floatLists, "def halves(x):\n    return [x / 2, x / 2]", 0},
		{"a numpy float near but not equal to the expected float", floats, "import numpy\n\ndef half(x):\n    return numpy.float64(x / 2 + 1e-9)", 0},
		{"honest floats within the tolerance", floats, "def half(x):\n    return x / 2 + 1e-7", 1},
		{"honest lists of floats within the tolerance", floatLists, "def halves(x):\n    return [x / 2 - 1e-8]", 1},
		{"a set-equality task in another order", sets("2"), "def similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b), reverse=True))", 1},
		{"a set-equality task with a wrong item", sets("2"), "def similar_elements(a, b):\n    return tuple(set(a) & set(b)) + (99,)", 0},
		{"another task's id: no oracle, the order counts", sets("3"), "def similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b), reverse=True))", 0},
		{"a not-None task returning the match", matches, "import re\n\ndef check_str(s):\n    return re.search('^[aeiouAEIOU]', s)", 1},
		{"a not-None task returning None always", matches, "def check_str(s):\n    return None", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := g.Grade(context.Background(), c.task, fence(c.output))
			if err != nil || s.Reward != c.want {
				t.Fatalf("reward %v, want %v (%v)", s.Reward, c.want, err)
			}
		})
	}
}

// TestCodeGraderGradesLargeRepliesWhole: an output, hidden tests or returned values of more than
// the output a sandbox run keeps (its first and last MiB) are graded whole, not turned into a
// grading error; and an error quotes no more than an excerpt of what a run printed.
func TestCodeGraderGradesLargeRepliesWhole(t *testing.T) {
	sb := testSandbox(t)
	requireNumpy(t, sb)
	g := NewGraders(sb)
	ints := fixtureTask(t, "mbpp_plus/f6")
	pad := strings.Repeat("evosteer ", (2<<20)/9+1)
	// Hidden tests of 1.5 MB shaped like the real ones: the dataset's header, then long inputs.
	var inputs, results strings.Builder
	for i := 0; i < 1500; i++ {
		row := make([]string, 150)
		sum := 0
		for j := range row {
			v := (i*7919 + j*104729) % 100000
			row[j] = strconv.Itoa(v)
			sum += v
		}
		inputs.WriteString("[[" + strings.Join(row, ", ") + "]], ")
		results.WriteString(strconv.Itoa(sum) + ", ")
	}
	bigTests := codeTask(t, "mbpp_plus/sum_list", "", datasetHeader+"inputs = ["+inputs.String()+"]\nresults = ["+results.String()+"]\n"+loopOf("sum_list"),
		"assert sum_list([1, 2]) == 3")
	if n := len(extraString(bigTests, "plus_test")); n < 1<<20+400<<10 {
		t.Fatalf("plus_test of %d bytes, want over 1.4 MiB", n)
	}
	// Expected values of 3 MB: an honest answer's values are too.
	bigValues := codeTask(t, "mbpp_plus/evens", "", datasetHeader+"inputs = [[300000], [5]]\nresults = [list(range(0, 600000, 2)), [0, 2, 4, 6, 8]]\n"+loopOf("evens"),
		"assert evens(2) == [0, 2]")
	refused := codeTask(t, "mbpp_plus/refused", "", "for x in []:\n    pass\nfor y in []:\n    pass\n", "assert f(1) == 1")
	cases := []struct {
		name   string
		task   Task
		output string
		want   float64
	}{
		{"a right function with a 2 MiB string constant", ints, fence("PAD = '" + pad + "'\n\ndef add_two(a, b):\n    return a + b"), 1},
		{"a wrong function with a 2 MiB string constant", ints, fence("PAD = '" + pad + "'\n\ndef add_two(a, b):\n    return a - b"), 0},
		{"a 2 MiB answer with no code", ints, "I do not know. " + pad, 0},
		{"a right function on 1.5 MB hidden tests", bigTests, fence("def sum_list(xs):\n    return sum(xs)"), 1},
		{"a wrong function on 1.5 MB hidden tests", bigTests, fence("def sum_list(xs):\n    return sum(xs) + 1"), 0},
		{"a right function returning 3 MB of values", bigValues, fence("def evens(n):\n    return list(range(0, 2 * n, 2))"), 1},
		{"a wrong function returning 3 MB of values", bigValues, fence("def evens(n):\n    return list(range(0, 2 * n + 2, 2))"), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := g.Grade(context.Background(), c.task, c.output)
			if err != nil || s.Reward != c.want {
				t.Fatalf("reward %v, want %v (error of %d bytes: %.300v)", s.Reward, c.want, len(fmt.Sprint(err)), err)
			}
		})
	}
	_, err := g.Grade(context.Background(), refused, "I do not know. "+pad)
	if err == nil || !strings.Contains(err.Error(), "mbpp_plus/refused") || !strings.Contains(err.Error(), "2 top-level for loops") || len(err.Error()) > 600 {
		t.Fatalf("hidden tests refused after a 2 MiB answer: error of %d bytes: %.300v", len(fmt.Sprint(err)), err)
	}
}
