//go:build !duckdb_arrow

package duck

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow/array"
)

var errNoTag = errors.New(`evosteer was built without the duckdb_arrow build tag; rebuild with "go build -tags duckdb_arrow" (make build does this)`)

// DB is a DuckDB database; this build has none (see Open).
type DB struct{}

// Open fails: this binary was built without the duckdb_arrow build tag.
func Open(ctx context.Context) (*DB, error) { return nil, errNoTag }

// Seal fails in this build.
func (db *DB) Seal(ctx context.Context) error { return errNoTag }

// Close does nothing in this build.
func (db *DB) Close() error { return nil }

// LoadTable fails in this build.
func (db *DB) LoadTable(ctx context.Context, name string, rr array.RecordReader) error {
	return errNoTag
}

// AppendTable fails in this build.
func (db *DB) AppendTable(ctx context.Context, name string, rr array.RecordReader, with []Column) error {
	return errNoTag
}

// Query fails in this build.
func (db *DB) Query(ctx context.Context, query string, params map[string]any) (array.RecordReader, error) {
	return nil, errNoTag
}

// Exec fails in this build.
func (db *DB) Exec(ctx context.Context, query string, params map[string]any) error {
	return errNoTag
}

// RunFile fails in this build.
func (db *DB) RunFile(ctx context.Context, name string, params map[string]any) (array.RecordReader, error) {
	return nil, errNoTag
}
