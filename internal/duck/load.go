//go:build duckdb_arrow

package duck

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// LoadTable reads rr to its end into a new temporary table name (the name is
// quoted, so it is taken literally). It is an error if a table of that name
// exists. rr is consumed but not released: the caller still releases it.
//
// The reader goes through a uniquely named Arrow view that is materialised at
// once (CREATE TEMP TABLE ... AS SELECT * FROM view) and dropped and released
// right after; the view itself is never queried otherwise (ARCHITECTURE.md §10).
func (db *DB) LoadTable(ctx context.Context, name string, rr array.RecordReader) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.loadTable(ctx, name, rr); err != nil {
		return fmt.Errorf("load table %q: %w", name, err)
	}
	return nil
}

func (db *DB) loadTable(ctx context.Context, name string, rr array.RecordReader) error {
	if db.closed {
		return errClosed
	}
	if name == "" {
		return errors.New("empty table name")
	}
	if rr == nil {
		return errors.New("nil record reader")
	}
	exists, err := db.tableExists(ctx, name)
	if err != nil {
		return err
	}
	if exists {
		return errors.New("a table of that name already exists")
	}
	return db.materialise(ctx, name, rr)
}

// materialise creates the temporary table name from rr through a short-lived
// Arrow view.
func (db *DB) materialise(ctx context.Context, name string, rr array.RecordReader) (err error) {
	view := db.internalName("view")
	release, err := db.arrow.RegisterView(rr, view)
	if err != nil {
		return fmt.Errorf("register arrow view: %w", err)
	}
	defer func() {
		// Drop the view before its stream is released: a dangling view
		// would point to freed memory.
		if derr := db.execRaw(ctx, "DROP VIEW IF EXISTS "+quoteIdent(view)); derr != nil && err == nil {
			err = derr
		}
		release()
	}()
	if err := db.execRaw(ctx, "CREATE TEMP TABLE "+quoteIdent(name)+" AS SELECT * FROM "+quoteIdent(view)); err != nil {
		return err
	}
	if rerr := rr.Err(); rerr != nil && !errors.Is(rerr, io.EOF) {
		return errors.Join(fmt.Errorf("reading the record reader: %w", rerr),
			db.execRaw(ctx, "DROP TABLE IF EXISTS "+quoteIdent(name)))
	}
	return nil
}

// AppendTable appends the rows of rr to the table name by column name, and
// creates the table (temporary, like LoadTable) when it does not exist. The
// constant columns in with come first in a new table's column order, e.g.
// []Column{{"step", int64(3)}, {"stage", "rollout"}}.
//
// The semantics are UNION ALL BY NAME: a column of the table that rr lacks
// gets NULL for the new rows, and a column of rr (or of with) that the table
// lacks is added to the table (NULL for the old rows). Column names compare
// case-insensitively, as in DuckDB. The append is one transaction. rr is
// consumed but not released.
func (db *DB) AppendTable(ctx context.Context, name string, rr array.RecordReader, with []Column) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.appendTable(ctx, name, rr, with); err != nil {
		return fmt.Errorf("append to table %q: %w", name, err)
	}
	return nil
}

func (db *DB) appendTable(ctx context.Context, name string, rr array.RecordReader, with []Column) (err error) {
	if db.closed {
		return errClosed
	}
	if name == "" {
		return errors.New("empty table name")
	}
	if rr == nil {
		return errors.New("nil record reader")
	}
	// The constant columns become parameters $__c0, $__c1, ... of the select.
	seen := make(map[string]bool)
	for _, f := range rr.Schema().Fields() {
		seen[strings.ToLower(f.Name)] = true
	}
	args := make([]driver.NamedValue, len(with))
	selectList := make([]string, 0, len(with)+1)
	for i, c := range with {
		if c.Name == "" {
			return fmt.Errorf("constant column %d has an empty name", i)
		}
		if seen[strings.ToLower(c.Name)] {
			return fmt.Errorf("constant column %q is also a column of the reader or given twice", c.Name)
		}
		seen[strings.ToLower(c.Name)] = true
		if c.Value == nil {
			return fmt.Errorf("constant column %q: nil value (its type would be unknown)", c.Name)
		}
		v, err := bindValue(c.Value)
		if err != nil {
			return fmt.Errorf("constant column %q: %w", c.Name, err)
		}
		p := fmt.Sprintf("__c%d", i)
		args[i] = driver.NamedValue{Name: p, Ordinal: i + 1, Value: v}
		selectList = append(selectList, "$"+p+" AS "+quoteIdent(c.Name))
	}

	exists, err := db.tableExists(ctx, name)
	if err != nil {
		return err
	}

	if err := db.execRaw(ctx, "BEGIN TRANSACTION"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, db.execRaw(ctx, "ROLLBACK"))
			return
		}
		err = db.execRaw(ctx, "COMMIT")
	}()

	stage := db.internalName("stage")
	if err := db.materialise(ctx, stage, rr); err != nil {
		return err
	}
	selectSQL := "SELECT " + strings.Join(append(selectList, "*"), ", ") + " FROM " + quoteIdent(stage)

	if !exists {
		if err := db.execRaw(ctx, "CREATE TEMP TABLE "+quoteIdent(name)+" AS "+selectSQL, args...); err != nil {
			return err
		}
	} else {
		// Add the columns the table lacks, with the types DuckDB gives them.
		have, err := db.tableColumns(ctx, name)
		if err != nil {
			return err
		}
		newCols, err := db.selectColumns(ctx, selectSQL, args)
		if err != nil {
			return err
		}
		for _, c := range newCols {
			if have[strings.ToLower(c.name)] {
				continue
			}
			if err := db.execRaw(ctx, "ALTER TABLE "+quoteIdent(name)+" ADD COLUMN "+quoteIdent(c.name)+" "+c.typ); err != nil {
				return err
			}
		}
		if err := db.execRaw(ctx, "INSERT INTO "+quoteIdent(name)+" BY NAME "+selectSQL, args...); err != nil {
			return err
		}
	}
	return db.execRaw(ctx, "DROP TABLE "+quoteIdent(stage))
}

// execRaw runs SQL built by this package (no parameter-name checks).
func (db *DB) execRaw(ctx context.Context, query string, args ...driver.NamedValue) error {
	_, err := db.conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	return err
}

// queryRows runs SQL built by this package and returns all its rows.
func (db *DB) queryRows(ctx context.Context, query string, args ...driver.NamedValue) ([][]driver.Value, error) {
	rows, err := db.conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	if err != nil {
		return nil, err
	}
	var out [][]driver.Value
	for {
		row := make([]driver.Value, len(rows.Columns()))
		if err := rows.Next(row); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, errors.Join(err, rows.Close())
		}
		out = append(out, row)
	}
	return out, rows.Close()
}

// tableExists reports whether a table name exists in any schema (a temporary
// table would shadow a permanent one).
func (db *DB) tableExists(ctx context.Context, name string) (bool, error) {
	rows, err := db.queryRows(ctx,
		"SELECT count(*) FROM duckdb_tables() WHERE lower(table_name) = lower($name)",
		driver.NamedValue{Name: "name", Ordinal: 1, Value: name})
	if err != nil {
		return false, fmt.Errorf("look up table: %w", err)
	}
	return len(rows) == 1 && rows[0][0] != int64(0), nil
}

// tableColumns returns the lower-cased column names of the table name as
// DuckDB resolves it (a temporary table first).
func (db *DB) tableColumns(ctx context.Context, name string) (map[string]bool, error) {
	rows, err := db.queryRows(ctx, "SELECT column_name FROM (DESCRIBE "+quoteIdent(name)+")")
	if err != nil {
		return nil, fmt.Errorf("describe table: %w", err)
	}
	cols := make(map[string]bool, len(rows))
	for _, r := range rows {
		cols[strings.ToLower(r[0].(string))] = true
	}
	return cols, nil
}

type columnType struct{ name, typ string }

// selectColumns returns the names and SQL types of the columns of a select.
func (db *DB) selectColumns(ctx context.Context, selectSQL string, args []driver.NamedValue) ([]columnType, error) {
	rows, err := db.queryRows(ctx, "SELECT column_name, column_type FROM (DESCRIBE "+selectSQL+")", args...)
	if err != nil {
		return nil, fmt.Errorf("describe appended rows: %w", err)
	}
	out := make([]columnType, len(rows))
	for i, r := range rows {
		out[i] = columnType{name: r[0].(string), typ: r[1].(string)}
	}
	return out, nil
}
