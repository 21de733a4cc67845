package calibrate

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/paradigms"
)

// Reference is the untrained architecture ρ's policy name (the evaluation's, stages/evaluate).
const Reference = "reference"

// Policies are the policies calibrate reads, in the paper's row order: the scripted baselines
// (paradigms.Baselines: the executor alone and the four fixed paradigms) and ρ, never the
// method's own rows.
var Policies = append(slices.Clone(paradigms.Baselines), Reference)

// Cell is one target: a policy's measured score on a benchmark, in points (0–100).
type Cell struct {
	Benchmark string
	Policy    string
	Score     float64
	Std       float64 // 0 when the table gives none
	N         int     // 0 when the table gives none
	Line      int     // the CSV line it came from
}

// Key names a (benchmark, policy) cell.
type Key struct{ Benchmark, Policy string }

// Targets are the cells of a target table and the table's sha256.
type Targets struct {
	Path   string
	SHA256 string
	Cells  []Cell
}

// Score returns a cell's target.
func (t *Targets) Score(k Key) (Cell, bool) {
	i := slices.IndexFunc(t.Cells, func(c Cell) bool { return c.Benchmark == k.Benchmark && c.Policy == k.Policy })
	if i < 0 {
		return Cell{}, false
	}
	return t.Cells[i], true
}

// inOrder are the table's cells in the report's order: benchmarks in the world's column order,
// policies in the paper's row order.
func (t *Targets) inOrder() []Cell {
	var out []Cell
	for _, b := range t.Benchmarks() {
		for _, p := range Policies {
			if c, ok := t.Score(Key{b, p}); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// Benchmarks are the benchmarks of the table, in the world's column order.
func (t *Targets) Benchmarks() []string {
	var out []string
	for _, b := range config.SimBenchmarks {
		if slices.ContainsFunc(t.Cells, func(c Cell) bool { return c.Benchmark == b }) {
			out = append(out, b)
		}
	}
	return out
}

// ReadTargets reads a CSV target table: a header naming benchmark, policy and score (std, n
// and any other column are optional; others are ignored), then one row per cell, each with as
// many fields as the header; a UTF-8 byte-order mark and CRLF line ends are read. A repeated
// header column, a row of another length, a number not in plain decimal notation (see
// decimal), a policy outside Policies, a benchmark the world has no row for, a score outside
// [0, 100], a negative std, a non-positive n or a repeated cell is refused with the file, line
// and column.
func ReadTargets(path string) (*Targets, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("targets: %w", err)
	}
	sum := sha256.Sum256(data)
	t, err := parseTargets(path, data)
	if err != nil {
		return nil, err
	}
	t.SHA256 = hex.EncodeToString(sum[:])
	return t, nil
}

func parseTargets(path string, data []byte) (*Targets, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))))
	r.FieldsPerRecord = -1 // checked below, with a clearer message than encoding/csv's
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file: want a header line benchmark,policy,score[,std][,n]", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(h))
		if first, dup := col[name]; dup {
			_, c := r.FieldPos(i)
			return nil, fmt.Errorf("%s:1:%d: column %q repeats column %d; name each column once", path, c, name, first+1)
		}
		col[name] = i
	}
	for _, need := range []string{"benchmark", "policy", "score"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s:1: the header has no column %q (want benchmark,policy,score[,std][,n])", path, need)
		}
	}
	t := &Targets{Path: path}
	seen := map[Key]int{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("%s:%d: %d fields, the header has %d; give every row one field per column (an empty field for a missing value)", path, line, len(rec), len(header))
		}
		field := func(name string) (string, int) {
			i, ok := col[name]
			if !ok || i >= len(rec) {
				return "", -1
			}
			_, c := r.FieldPos(i)
			return strings.TrimSpace(rec[i]), c
		}
		bad := func(name string, c int, format string, args ...any) error {
			return fmt.Errorf("%s:%d:%d: column %q: %s", path, line, max(c, 1), name, fmt.Sprintf(format, args...))
		}
		c := Cell{Line: line}
		var pos int
		if c.Benchmark, pos = field("benchmark"); !slices.Contains(config.SimBenchmarks, c.Benchmark) {
			return nil, bad("benchmark", pos, "unknown benchmark %q (the world has rows for %s)", c.Benchmark, strings.Join(config.SimBenchmarks, ", "))
		}
		var policyCol int
		if c.Policy, policyCol = field("policy"); !slices.Contains(Policies, c.Policy) {
			return nil, bad("policy", policyCol, "policy %q is not a baseline calibrate fits (%s); the method's own rows are predictions of the world, never targets",
				c.Policy, strings.Join(Policies, ", "))
		}
		s, pos := field("score")
		if c.Score, err = decimal(s); err != nil || c.Score < 0 || c.Score > 100 {
			return nil, bad("score", pos, "%q is not a score in [0, 100] (points)", s)
		}
		if s, pos := field("std"); s != "" {
			if c.Std, err = decimal(s); err != nil || c.Std < 0 || c.Std > 100 {
				return nil, bad("std", pos, "%q is not a standard deviation in [0, 100] (points)", s)
			}
		}
		if s, pos := field("n"); s != "" {
			if c.N, err = strconv.Atoi(s); err != nil || !digits.MatchString(s) || c.N < 1 {
				return nil, bad("n", pos, "%q is not a positive task count", s)
			}
		}
		k := Key{c.Benchmark, c.Policy}
		if first, dup := seen[k]; dup {
			return nil, bad("policy", policyCol, "cell (%s, %s) repeats line %d", c.Benchmark, c.Policy, first)
		}
		seen[k] = line
		t.Cells = append(t.Cells, c)
	}
	if len(t.Cells) == 0 {
		return nil, fmt.Errorf("%s: no target rows after the header", path)
	}
	return t, nil
}

// plainDecimal is a number as a table writes it: digits with an optional fraction and
// exponent. strconv.ParseFloat alone would also take digit separators (5_0 as 50), hexadecimal
// (0x1p5), signs, Inf and NaN.
var (
	plainDecimal = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$`)
	digits       = regexp.MustCompile(`^[0-9]+$`)
)

// decimal parses a number in plain decimal notation (plainDecimal).
func decimal(s string) (float64, error) {
	if !plainDecimal.MatchString(s) {
		return 0, fmt.Errorf("%q is not a plain decimal number", s)
	}
	return strconv.ParseFloat(s, 64)
}
