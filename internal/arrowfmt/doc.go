// Package arrowfmt prints Arrow record batches for people and scripts: an aligned text table,
// CSV, or a JSON array of objects. The CLI's `sql` and `inspect` use it.
//
// It must not read files or run queries; it only renders what it is given.
package arrowfmt
