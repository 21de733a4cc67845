// Package schema declares every Arrow table of the EvoSteer pipeline and is
// the only place that reads and writes the pipeline's Arrow IPC files.
//
// Each table (ARCHITECTURE.md §4) is declared once, with a version number, as a
// package-level *Table. Files are Arrow IPC *file* format, zstd-compressed,
// and carry lineage metadata (run, step, stage, config hash, input hashes)
// so that any file can be traced back to what produced it.
//
// Guarantees:
//   - Writes are atomic (temp file, fsync, rename, fsync dir): a crash never
//     leaves a half-written file under the final name.
//   - Writes are deterministic: the same rows and lineage give byte-identical
//     files, whatever the input chunking or column order, because rows are
//     re-chunked into MaxBatchRows batches and columns re-typed to the
//     declared schema.
//   - Reads are memory-mapped and strictly checked (magic, table name,
//     version, columns, batch layout); every error names the file, and
//     corrupt input yields an error, never a panic. Every length and offset
//     arrow-go will use is verified against the file before arrow-go sees
//     it (verify.go), since a failed allocation is a fatal error, not a
//     panic; every buffer's zstd checksum is compared with its data, and
//     the lineage's two copies (schema message, footer) must agree.
//   - Reads check values, not only bytes: each table declares its columns'
//     domains (ranges, enumerations, finite floats, relations within a row;
//     domain.go), and a row outside them is an error naming the file, row
//     and column, so no stage computes from it. Relations between files
//     (a decision's episode in the episodes file) are the stages' to check.
//
// The package must stay a leaf: it must not import DuckDB or any project
// package but internal/atomicfile (atomic writes) and internal/mapfile (mapped reads), and it holds
// no stage logic. Stages decide what goes into
// a table; this package only decides what a table is and how it is stored.
package schema
