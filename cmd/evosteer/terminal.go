package main

import (
	"fmt"
	"io"

	"github.com/evosteer/evosteer-go/internal/arrowfmt"
)

// printError prints a command's error on w: an error may quote a server's message or a model's
// output, so every control character in it is escaped, and its own line breaks are kept.
func printError(w io.Writer, err error) {
	fmt.Fprintln(w, "evosteer:", arrowfmt.EscapeLines(err.Error()))
}
