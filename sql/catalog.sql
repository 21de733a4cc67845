-- catalog: the user tables in the database (the tables loaded from Arrow are
-- temporary), with their column count and DuckDB's row estimate.
-- Reads: duckdb_tables().
-- Parameters: $prefix  only tables whose name starts with it ('' for all).
SELECT
    table_name,
    column_count,
    estimated_size AS estimated_rows,
    temporary
FROM duckdb_tables()
WHERE NOT internal
  AND starts_with(table_name, $prefix)
ORDER BY table_name
