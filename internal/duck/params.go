//go:build duckdb_arrow

package duck

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sort"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// bindArgs checks params against the parameters of the prepared statement st
// and returns them as named arguments in the statement's parameter order.
//
// The driver binds a parameter by name only when that name is supplied and
// otherwise falls back, silently, to the argument at the same position; so
// the names are checked here: every $name the SQL uses must be supplied, and
// every supplied name must be used (this catches typos on both sides).
func bindArgs(st driver.Stmt, params map[string]any) ([]sql.NamedArg, error) {
	ds, ok := st.(*duckdb.Stmt)
	if !ok {
		return nil, fmt.Errorf("internal error: prepared statement is a %T, not a *duckdb.Stmt", st)
	}
	n := ds.NumInput()
	used := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		name, err := ds.ParamName(i)
		if err != nil {
			return nil, fmt.Errorf("parameter %d: %w", i, err)
		}
		if isPositional(name) {
			return nil, fmt.Errorf("positional parameter ($%s or ?) in the SQL: use named parameters ($name)", name)
		}
		used = append(used, name)
	}

	var missing, unused []string
	usedSet := make(map[string]bool, n)
	for _, name := range used {
		usedSet[name] = true
		if _, ok := params[name]; !ok {
			missing = append(missing, "$"+name)
		}
	}
	for name := range params {
		if !usedSet[name] {
			unused = append(unused, "$"+name)
		}
	}
	if len(missing) > 0 || len(unused) > 0 {
		sort.Strings(missing)
		sort.Strings(unused)
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "missing parameter "+strings.Join(missing, ", "))
		}
		if len(unused) > 0 {
			parts = append(parts, "parameter "+strings.Join(unused, ", ")+" not used by the SQL")
		}
		usedList := "none"
		if len(used) > 0 {
			usedList = "$" + strings.Join(used, ", $")
		}
		return nil, fmt.Errorf("%s (the SQL uses: %s)", strings.Join(parts, "; "), usedList)
	}

	args := make([]sql.NamedArg, n)
	for i, name := range used {
		v, err := bindValue(params[name])
		if err != nil {
			return nil, fmt.Errorf("parameter $%s: %w", name, err)
		}
		args[i] = sql.Named(name, v)
	}
	return args, nil
}

// isPositional reports whether a parameter name is a position (? and $1 are
// named "1", "2", ...).
func isPositional(name string) bool {
	if name == "" {
		return true
	}
	for _, r := range name {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// bindValue checks that v is a Go value the driver binds predictably and
// normalises it (int -> int64, uint -> uint64).
func bindValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, string, []byte, time.Time,
		[]string, []int8, []int16, []int32, []int64, []uint16, []uint32, []uint64, []float32, []float64, []bool:
		return v, nil
	case int:
		return int64(x), nil
	case uint:
		return uint64(x), nil
	case []int:
		out := make([]int64, len(x))
		for i, e := range x {
			out[i] = int64(e)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported Go type %T (use bool, int, int64, float64, string, time.Time, nil, or a slice of these)", v)
}
