//go:build duckdb_arrow

package duck

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"
	duckdb "github.com/duckdb/duckdb-go/v2"

	sqlfiles "github.com/evosteer/evosteer-go/sql"
)

// DB is an in-memory DuckDB database with one connection. Its methods are
// safe for concurrent use (they are serialised). Readers returned by Query
// and RunFile hold materialised results: they may be read while other calls
// run, and must be released before Close.
type DB struct {
	mu        sync.Mutex
	connector *duckdb.Connector
	conn      driver.Conn
	arrow     *duckdb.Arrow
	seq       atomic.Int64 // for unique internal object names
	closed    bool
	sealed    bool
}

// internalPrefix starts the names of the views and staging tables this
// package creates and drops again within one call.
const internalPrefix = "__evosteer_"

// Open opens an in-memory DuckDB database with one connection.
func Open(ctx context.Context) (*DB, error) {
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		return nil, fmt.Errorf("open duckdb: %w", err)
	}
	conn, err := connector.Connect(ctx)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open duckdb: connect: %w", err), connector.Close())
	}
	ar, err := duckdb.NewArrowFromConn(conn)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open duckdb: arrow interface: %w", err), conn.Close(), connector.Close())
	}
	return &DB{connector: connector, conn: conn, arrow: ar}, nil
}

// Seal cuts the database off from the file system and the network for the rest of its life, so
// that no statement can write (or read) a file anywhere: DuckDB's external access is switched
// off (COPY ... TO, EXPORT DATABASE, ATTACH of a file, read_csv and its kind, INSTALL and LOAD
// fail with a permission error), and its configuration is locked, so no later statement can
// switch access back on or point temp_directory or profiling_output somewhere. Query on a sealed
// database also refuses, before running it, every statement that is not a reading one (see
// readingStatement). Loaded tables, and Arrow readers loaded afterwards, still work. Call it
// before running SQL that the program did not write, best right after Open: a sealed database
// never spills to disk, so a query that needs more than DuckDB's memory_limit fails with an
// out-of-memory error instead of writing temporary files.
//
// External access off does not mean "no file": DuckDB still lets every statement open the files
// under allowed_directories and allowed_paths, and when external access goes off it adds the
// temp_directory (by default .tmp in the working directory, which may be a link into a run) to
// allowed_directories, so COPY ... TO '.tmp/x' wrote there. A private temporary directory made
// by the program would not help: whatever directory DuckDB may spill to is one any statement may
// write to (COPY, EXPORT DATABASE, EXPLAIN ANALYZE COPY), its path is readable through
// current_setting('temp_directory'), and DuckDB has no spill-only permission
// (disabled_filesystems = 'LocalFileSystem' stops spilling too). So spilling is switched off
// (temp_directory empty, before external access goes off, so nothing is added), both lists are
// emptied, the local file system is disabled as a second wall, and the settings are read back:
// Seal fails unless they hold.
func (db *DB) Seal(ctx context.Context) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return errClosed
	}
	for _, step := range []struct{ what, sql string }{
		{"switch off spilling to disk", "SET temp_directory = ''"},
		{"empty allowed_directories", "SET allowed_directories = []"},
		{"empty allowed_paths", "SET allowed_paths = []"},
		{"disable the local file system", "SET disabled_filesystems = 'LocalFileSystem'"},
		{"disable external access", "SET enable_external_access = false"},
		{"lock the configuration", "SET lock_configuration = true"},
	} {
		if err := db.execRaw(ctx, step.sql); err != nil {
			return fmt.Errorf("duckdb: %s: %w", step.what, err)
		}
	}
	// (current_setting('disabled_filesystems') reads back empty even when it holds.)
	rows, err := db.queryRows(ctx, `SELECT current_setting('temp_directory')::VARCHAR, current_setting('allowed_directories')::VARCHAR,
		current_setting('allowed_paths')::VARCHAR, current_setting('enable_external_access')::VARCHAR,
		current_setting('lock_configuration')::VARCHAR`)
	if err != nil {
		return fmt.Errorf("duckdb: read the sealed settings back: %w", err)
	}
	want := []string{"", "[]", "[]", "false", "true"}
	if len(rows) != 1 || fmt.Sprintf("%q", rows[0]) != fmt.Sprintf("%q", want) {
		return fmt.Errorf("duckdb: the database did not seal: temp_directory, allowed_directories, allowed_paths, enable_external_access and lock_configuration are %q, want %q", rows, want)
	}
	db.sealed = true
	return nil
}

// readingStatement reports whether a sealed database's Query runs a statement of type t: a
// reading statement (SELECT, FROM, WITH, VALUES, DESCRIBE, SHOW, SUMMARIZE and PRAGMA table_info,
// which DuckDB turns into a SELECT; EXPLAIN). Everything else is refused before it runs: COPY,
// EXPORT, ATTACH and DETACH, INSTALL and LOAD, SET, CALL (CHECKPOINT is one), PRAGMA, and the
// statements that change tables. This list is an allow-list, so a kind of statement DuckDB adds
// later is refused too. It does not carry the promise alone: EXPLAIN ANALYZE runs the statement
// it explains, and that meets the sealed file system.
func readingStatement(t duckdb.StmtType) bool {
	return t == duckdb.STATEMENT_TYPE_SELECT || t == duckdb.STATEMENT_TYPE_EXPLAIN
}

// statementNames names the statement types a sealed database refuses most often.
var statementNames = map[duckdb.StmtType]string{
	duckdb.STATEMENT_TYPE_COPY: "COPY", duckdb.STATEMENT_TYPE_EXPORT: "EXPORT", duckdb.STATEMENT_TYPE_ATTACH: "ATTACH",
	duckdb.STATEMENT_TYPE_DETACH: "DETACH", duckdb.STATEMENT_TYPE_LOAD: "INSTALL or LOAD", duckdb.STATEMENT_TYPE_SET: "SET",
	duckdb.STATEMENT_TYPE_CALL: "CALL", duckdb.STATEMENT_TYPE_PRAGMA: "PRAGMA",
	duckdb.STATEMENT_TYPE_INSERT: "INSERT", duckdb.STATEMENT_TYPE_UPDATE: "UPDATE", duckdb.STATEMENT_TYPE_DELETE: "DELETE",
	duckdb.STATEMENT_TYPE_CREATE: "CREATE", duckdb.STATEMENT_TYPE_DROP: "DROP", duckdb.STATEMENT_TYPE_ALTER: "ALTER",
}

// Close closes the connection and the database. Release every reader first.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	return errors.Join(db.conn.Close(), db.connector.Close())
}

var errClosed = errors.New("duckdb database is closed")

// Query runs one SQL statement with named parameters and returns its result
// as Arrow. params must hold exactly the $names the SQL uses (nil when it uses
// none). The caller releases the reader. DuckDB's error messages are kept
// verbatim.
func (db *DB) Query(ctx context.Context, query string, params map[string]any) (array.RecordReader, error) {
	rr, err := db.query(ctx, query, params)
	if err != nil {
		return nil, fmt.Errorf("duckdb query: %w", db.sealedError(err))
	}
	return rr, nil
}

// sealedError marks err with ErrSealed when the database is sealed and DuckDB refused the
// statement for that reason.
func (db *DB) sealedError(err error) error {
	if m := err.Error(); db.sealed && (strings.Contains(m, "disabled by configuration") || strings.Contains(m, "configuration has been locked")) {
		return fmt.Errorf("%w: %w", ErrSealed, err)
	}
	return err
}

// Exec runs statements without a result (CREATE, INSERT, SET, ...). The text
// may hold several statements; the parameters bind to the last one, and the
// earlier ones must not use any (they run first, before the last one is
// checked). Parameter rules are those of Query.
func (db *DB) Exec(ctx context.Context, query string, params map[string]any) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.exec(ctx, query, params); err != nil {
		return fmt.Errorf("duckdb exec: %w", db.sealedError(err))
	}
	return nil
}

// RunFile runs the embedded SQL file name (see package sqlfiles; with or
// without ".sql") like Query.
func (db *DB) RunFile(ctx context.Context, name string, params map[string]any) (array.RecordReader, error) {
	text, err := sqlfiles.Read(name)
	if err != nil {
		return nil, err
	}
	rr, err := db.query(ctx, text, params)
	if err != nil {
		return nil, fmt.Errorf("sql file %s.sql: %w", strings.TrimSuffix(name, ".sql"), err)
	}
	return rr, nil
}

func (db *DB) query(ctx context.Context, query string, params map[string]any) (array.RecordReader, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil, errClosed
	}
	// Prepare alone never executes anything (PrepareContext would run all but
	// the last statement), so the parameters are checked before any effect.
	st, err := db.conn.Prepare(query)
	if err != nil {
		if strings.Contains(err.Error(), "multi-statement") {
			return nil, errors.New("the SQL holds more than one statement; Query and RunFile take exactly one (run set-up statements with Exec)")
		}
		return nil, err
	}
	if db.sealed {
		if err := refuseWriting(st); err != nil {
			return nil, errors.Join(err, st.Close())
		}
	}
	args, err := bindArgs(st, params)
	if cerr := st.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	anyArgs := make([]any, len(args))
	for i, a := range args {
		anyArgs[i] = a
	}
	return db.arrow.QueryContext(ctx, query, anyArgs...)
}

// refuseWriting returns an ErrSealed error unless the prepared statement is a reading one.
func refuseWriting(st driver.Stmt) error {
	ds, ok := st.(*duckdb.Stmt)
	if !ok {
		return fmt.Errorf("%w: cannot tell the kind of statement (driver statement %T)", ErrSealed, st)
	}
	t, err := ds.StatementType()
	if err != nil {
		return err
	}
	if readingStatement(t) {
		return nil
	}
	name, ok := statementNames[t]
	if !ok {
		name = fmt.Sprintf("this kind of (DuckDB statement type %d)", t)
	}
	return fmt.Errorf("%w: %s statement refused; only reading statements run (SELECT, FROM, WITH, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN)", ErrSealed, name)
}

// exec runs query with the connection lock held.
func (db *DB) exec(ctx context.Context, query string, params map[string]any) error {
	if db.closed {
		return errClosed
	}
	// PrepareContext runs every statement but the last (without parameters)
	// and prepares the last one, which is then checked and executed.
	st, err := db.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		if strings.HasPrefix(err.Error(), "incorrect argument count") {
			return fmt.Errorf("%w (parameters bind only to the last statement)", err)
		}
		return err
	}
	args, err := bindArgs(st, params)
	if err == nil {
		named := make([]driver.NamedValue, len(args))
		for i, a := range args {
			named[i] = driver.NamedValue{Name: a.Name, Ordinal: i + 1, Value: a.Value}
		}
		_, err = st.(driver.StmtExecContext).ExecContext(ctx, named)
	}
	if cerr := st.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// internalName returns a fresh name for a view or staging table.
func (db *DB) internalName(kind string) string {
	return fmt.Sprintf("%s%s_%d", internalPrefix, kind, db.seq.Add(1))
}

// quoteIdent quotes name as a DuckDB identifier.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
