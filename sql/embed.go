package sqlfiles

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.sql
var files embed.FS

const ext = ".sql"

// Read returns the text of the embedded SQL file name; name may be given with
// or without the ".sql" extension. An unknown name is an error that lists the
// available names.
func Read(name string) (string, error) {
	base := strings.TrimSuffix(name, ext)
	if base == "" || strings.ContainsAny(base, `/\`) {
		return "", fmt.Errorf("unknown sql file %q (available: %s)", name, strings.Join(Names(), ", "))
	}
	b, err := files.ReadFile(base + ext)
	if err != nil {
		return "", fmt.Errorf("unknown sql file %q (available: %s)", name, strings.Join(Names(), ", "))
	}
	return string(b), nil
}

// Names returns the names of the embedded SQL files, without the ".sql"
// extension, sorted.
func Names() []string {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil // cannot happen with a valid embed.FS
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ext) {
			names = append(names, strings.TrimSuffix(e.Name(), ext))
		}
	}
	sort.Strings(names)
	return names
}
