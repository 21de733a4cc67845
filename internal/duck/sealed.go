package duck

import "errors"

// ErrSealed marks a statement a sealed database refused (Seal): it reached for files, the network
// or the configuration. Callers test it with errors.Is; only this package reads DuckDB's wording.
var ErrSealed = errors.New("the database is sealed: files, the network and settings are off")
