package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// codeTemplate is one function-writing task of the code families. The world never runs code:
// whether a program passes is part of the hidden task truth. The visible test's expected value
// is computed here so that the prompt is consistent with the correct program.
type codeTemplate struct {
	name   string
	params string
	spec   string   // "Write a ... function to ..."
	doc    string   // the docstring of the correct program
	body   []string // lines before the return, indented one level
	ret    string   // the correct return expression
	input  func(r *rand.Rand, nm *namer) (args string, expected string)
}

func intList(r *rand.Rand, n, lo, hi int) []int {
	xs := make([]int, n)
	for i := range xs {
		xs[i] = lo + r.IntN(hi-lo+1)
	}
	return xs
}

func pyList(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

var codeTemplates = []codeTemplate{
	{"sum_squares", "n", "Write a function to find the sum of the squares of the first n natural numbers.",
		"Return the sum of the squares of 1..n.",
		[]string{"total = 0", "for i in range(1, n + 1):", "    total += i * i"}, "total",
		func(r *rand.Rand, _ *namer) (string, string) {
			n := 3 + r.IntN(18)
			return strconv.Itoa(n), strconv.Itoa(n * (n + 1) * (2*n + 1) / 6)
		}},
	{"count_vowels", "s", "Write a python function to count the number of vowels in a given string.",
		"Count the vowels of s, ignoring case.",
		[]string{"count = 0", "for ch in s.lower():", "    if ch in \"aeiou\":", "        count += 1"}, "count",
		func(r *rand.Rand, nm *namer) (string, string) {
			w := strings.ToLower(nm.word() + nm.word())
			c := 0
			for _, ch := range w {
				if strings.ContainsRune("aeiou", ch) {
					c++
				}
			}
			return strconv.Quote(w), strconv.Itoa(c)
		}},
	{"max_difference", "nums", "Write a function to find the maximum difference between any two elements in a given list.",
		"Return the largest difference between two elements of nums.",
		nil, "max(nums) - min(nums)",
		func(r *rand.Rand, _ *namer) (string, string) {
			xs := intList(r, 5+r.IntN(4), -20, 60)
			lo, hi := xs[0], xs[0]
			for _, x := range xs {
				lo, hi = min(lo, x), max(hi, x)
			}
			return pyList(xs), strconv.Itoa(hi - lo)
		}},
	{"count_even", "nums", "Write a python function to count the even numbers in a given list.",
		"Count the even elements of nums.",
		nil, "sum(1 for x in nums if x % 2 == 0)",
		func(r *rand.Rand, _ *namer) (string, string) {
			xs := intList(r, 6+r.IntN(5), 1, 99)
			c := 0
			for _, x := range xs {
				if x%2 == 0 {
					c++
				}
			}
			return pyList(xs), strconv.Itoa(c)
		}},
	{"digit_sum", "n", "Write a function to compute the sum of the digits of a non-negative integer.",
		"Return the sum of the decimal digits of n.",
		nil, "sum(int(d) for d in str(n))",
		func(r *rand.Rand, _ *namer) (string, string) {
			n := 100 + r.IntN(99900)
			s := 0
			for m := n; m > 0; m /= 10 {
				s += m % 10
			}
			return strconv.Itoa(n), strconv.Itoa(s)
		}},
	{"triangular_number", "n", "Write a function to find the nth triangular number.",
		"Return the nth triangular number.",
		nil, "n * (n + 1) // 2",
		func(r *rand.Rand, _ *namer) (string, string) {
			n := 4 + r.IntN(40)
			return strconv.Itoa(n), strconv.Itoa(n * (n + 1) / 2)
		}},
	{"count_char", "text, ch", "Write a python function to count the occurrences of a given character in a string.",
		"Count how often ch occurs in text.",
		nil, "text.count(ch)",
		func(r *rand.Rand, nm *namer) (string, string) {
			w := strings.ToLower(nm.word() + nm.word() + nm.word())
			ch := string(w[r.IntN(len(w))])
			return strconv.Quote(w) + ", " + strconv.Quote(ch), strconv.Itoa(strings.Count(w, ch))
		}},
	{"longest_run", "nums", "Write a function to find the length of the longest run of equal adjacent elements in a list.",
		"Return the length of the longest run of equal adjacent elements.",
		[]string{"best = cur = 0", "prev = None", "for x in nums:", "    cur = cur + 1 if x == prev else 1",
			"    prev = x", "    best = max(best, cur)"}, "best",
		func(r *rand.Rand, _ *namer) (string, string) {
			xs := intList(r, 8+r.IntN(5), 1, 3)
			best, cur := 0, 0
			for i, x := range xs {
				if i > 0 && x == xs[i-1] {
					cur++
				} else {
					cur = 1
				}
				best = max(best, cur)
			}
			return pyList(xs), strconv.Itoa(best)
		}},
	{"count_pairs_with_sum", "nums, target", "Write a python function to count the pairs of elements in a list whose sum equals a given target.",
		"Count index pairs i < j with nums[i] + nums[j] == target.",
		[]string{"count = 0", "for i in range(len(nums)):", "    for j in range(i + 1, len(nums)):",
			"        if nums[i] + nums[j] == target:", "            count += 1"}, "count",
		func(r *rand.Rand, _ *namer) (string, string) {
			xs := intList(r, 6+r.IntN(4), 1, 9)
			t := 6 + r.IntN(8)
			c := 0
			for i := range xs {
				for j := i + 1; j < len(xs); j++ {
					if xs[i]+xs[j] == t {
						c++
					}
				}
			}
			return pyList(xs) + ", " + strconv.Itoa(t), strconv.Itoa(c)
		}},
	{"product_of_digits", "n", "Write a python function to find the product of the digits of a positive integer.",
		"Return the product of the decimal digits of n.",
		[]string{"result = 1", "for d in str(n):", "    result *= int(d)"}, "result",
		func(r *rand.Rand, _ *namer) (string, string) {
			n := 0
			p := 1
			for i := 0; i < 3+r.IntN(3); i++ {
				d := 1 + r.IntN(9)
				n = n*10 + d
				p *= d
			}
			return strconv.Itoa(n), strconv.Itoa(p)
		}},
	{"sum_of_multiples", "limit, k", "Write a function to find the sum of all multiples of k below a given limit.",
		"Return the sum of the positive multiples of k below limit.",
		[]string{"total = 0", "for i in range(k, limit, k):", "    total += i"}, "total",
		func(r *rand.Rand, _ *namer) (string, string) {
			lim := 20 + r.IntN(80)
			k := 2 + r.IntN(6)
			s := 0
			for i := k; i < lim; i += k {
				s += i
			}
			return strconv.Itoa(lim) + ", " + strconv.Itoa(k), strconv.Itoa(s)
		}},
	{"count_words", "sentence", "Write a function to count the words in a sentence separated by spaces.",
		"Count the space-separated words of sentence.",
		nil, "len(sentence.split())",
		func(r *rand.Rand, nm *namer) (string, string) {
			n := 3 + r.IntN(5)
			ws := make([]string, n)
			for i := range ws {
				ws[i] = strings.ToLower(nm.word())
			}
			return strconv.Quote(strings.Join(ws, " ")), strconv.Itoa(n)
		}},
}

// codeMutations turn the correct return expression X into a wrong one: the distractor programs.
var codeMutations = []string{
	"X + 1", "X - 1", "2 * X", "X // 2", "X + 2", "X - 2",
	"max(X - 1, 0)", "3 * X", "X % 7", "-X", "X * X", "X + 3",
}

// program renders the function with return expression ret.
func (t codeTemplate) program(ret string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "def %s(%s):\n", t.name, t.params)
	fmt.Fprintf(&b, "    \"\"\"%s\"\"\"\n", t.doc)
	for _, l := range t.body {
		b.WriteString("    " + l + "\n")
	}
	b.WriteString("    return " + ret)
	return b.String()
}

func mutate(mut, expr string) string {
	simple := true
	for _, c := range expr {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			simple = false
			break
		}
	}
	if !simple {
		expr = "(" + expr + ")"
	}
	return strings.ReplaceAll(mut, "X", expr)
}
