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

// Seal cuts the database off from the file system and the network for the rest of its life:
// DuckDB's external access is switched off (COPY ... TO, EXPORT DATABASE, ATTACH of a file,
// read_csv and its kind, INSTALL and LOAD fail with a permission error) and its configuration is
// locked, so no later statement can switch access back on or point temp_directory or
// profiling_output somewhere. Loaded tables, and Arrow readers loaded afterwards, still work.
// Call it before running SQL that the program did not write.
func (db *DB) Seal(ctx context.Context) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return errClosed
	}
	if err := db.execRaw(ctx, "SET enable_external_access = false"); err != nil {
		return fmt.Errorf("duckdb: disable external access: %w", err)
	}
	if err := db.execRaw(ctx, "SET lock_configuration = true"); err != nil {
		return fmt.Errorf("duckdb: lock the configuration: %w", err)
	}
	db.sealed = true
	return nil
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
