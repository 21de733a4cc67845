package tasks

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// floatTask is an MBPP+ task whose hidden tests use the benchmark's own assertion helper
// (np.allclose for float results), the shape of every real plus_test.
func floatTask(t *testing.T) Task {
	t.Helper()
	plus := `import numpy as np
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


inputs = [[1.0], [2.5], [-4.0], [inf], [0.1]]
results = [0.5, 1.25, -2.0, inf, 0.05]
for i, (inp, exp) in enumerate(zip(inputs, results)):
    assertion(half(*inp), exp, 0)
`
	raw := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return Task{ID: "mbpp_plus/half", Family: "mbpp_plus", TaskType: "mbpp_plus", Split: "train",
		Prompt: "Write a function that halves a number.\nYour code should pass this test:\nassert half(1.0) == 0.5",
		Extra: map[string]json.RawMessage{"plus_test": raw(plus), "test_imports": raw([]string{}),
			"test_list": raw([]string{"assert half(1.0) == 0.5"})}}
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
