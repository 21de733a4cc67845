// Package sqlfiles embeds the pipeline's DuckDB SQL.
//
// This folder holds the pipeline's DuckDB SQL files (baselines, buckets, value
// data, pairs, diagnostics): one statement per file, named `<name>.sql`, with
// named parameters written `$name` (never `?` or `$1`). A file starts with a
// comment saying what it computes, which tables it reads and which parameters
// it takes. The files are run by internal/duck (DB.RunFile), which checks that
// the parameters supplied match the ones the SQL uses.
//
// The import path is github.com/evosteer/evosteer-go/sql; the package is named
// sqlfiles so that it does not clash with database/sql.
//
// This folder must not hold Go logic: only the embedding in embed.go.
package sqlfiles
