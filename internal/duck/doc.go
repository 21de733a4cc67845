// Package duck is the only importer of the DuckDB driver
// (github.com/duckdb/duckdb-go/v2, built with the duckdb_arrow tag), so the cgo
// link cost and the build tag stay in one place.
//
// It opens an in-memory database on one connection, loads Arrow record readers
// as tables (LoadTable, AppendTable), runs SQL with named parameters — ad hoc
// (Query, Exec) or embedded from the sql/ folder (RunFile) — and returns the
// results as Arrow record readers. Seal cuts a database off from the file
// system for good (no directory it may open, no spilling to disk, reading
// statements only in Query), before it runs SQL the program did not write
// (evosteer sql).
//
// Rules:
//   - Parameters are named ($name) and passed as a map. The names the SQL uses
//     and the names supplied must match exactly: a missing or an unused name is
//     an error (the driver would otherwise silently fall back to positional
//     binding). Positional parameters (? or $1) are rejected.
//   - Go values bind as: int, int64 -> BIGINT; float64 -> DOUBLE; string ->
//     VARCHAR; bool -> BOOLEAN; []string -> VARCHAR[] (use it with
//     list_contains($names, x) or x IN (SELECT unnest($names))); []int64 ->
//     BIGINT[]; []float64 -> DOUBLE[]; time.Time -> TIMESTAMP WITH TIME ZONE;
//     nil -> NULL. Maps and structs are rejected.
//   - Results are DuckDB's: 2,048-row batches, every field nullable, list
//     elements named "l". Callers re-chunk before writing and compare schemas
//     with a conforms check, not Schema.Equal. A batch lives only until the
//     reader's next Next or Release (DuckDB frees its memory then): Retain it
//     to keep it, and copy strings taken from it (strings.Clone), since
//     String.Value aliases the batch's buffers. The ctx given to Query also
//     governs reading its result.
//
// What this package must not do:
//   - hold query text for the stages: SQL lives in sql/*.sql; only generic
//     helpers (load, append, catalog look-ups) build SQL here;
//   - query a view registered from Arrow directly. DuckDB ignores projection
//     and filter pushdown on such views (wrong columns, dropped WHERE, crashes
//     in GROUP BY, a second scan returns 0 rows), so every reader is
//     materialised at once with CREATE TEMP TABLE t AS SELECT * FROM view, the
//     view is dropped and released, and only tables are queried (ARCHITECTURE.md §10).
//
// Without the duckdb_arrow build tag the package compiles to a stub whose Open
// fails with a message saying how to rebuild.
package duck
