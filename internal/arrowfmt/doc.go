// Package arrowfmt prints Arrow record batches for people and scripts: an aligned text table,
// CSV, or a JSON array of objects. The CLI's `sql` and `inspect` use it. Escape is the one
// rendering of outside text for a terminal (control characters as escapes) that the table
// format, csv for a terminal (Options.Terminal), the CLI's errors and summaries share.
//
// It must not read files or run queries; it only renders what it is given.
package arrowfmt
