package sqlfiles

import (
	"slices"
	"strings"
	"testing"
)

func TestNamesSortedAndHasCatalog(t *testing.T) {
	names := Names()
	if !slices.IsSorted(names) {
		t.Fatalf("Names not sorted: %v", names)
	}
	if !slices.Contains(names, "catalog") {
		t.Fatalf("Names %v lacks catalog", names)
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".sql") {
			t.Fatalf("name %q keeps its extension", n)
		}
	}
}

func TestReadWithAndWithoutExtension(t *testing.T) {
	a, err := Read("catalog")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Read("catalog.sql")
	if err != nil {
		t.Fatal(err)
	}
	if a != b || !strings.Contains(a, "$prefix") {
		t.Fatalf("Read gave different or unexpected texts:\n%s\n---\n%s", a, b)
	}
}

func TestReadUnknownListsNames(t *testing.T) {
	for _, name := range []string{"no_such_file", "", ".sql", "../sql/catalog", "sub/catalog"} {
		_, err := Read(name)
		if err == nil {
			t.Fatalf("Read(%q): no error", name)
		}
		if !strings.Contains(err.Error(), "catalog") {
			t.Fatalf("Read(%q) error does not list the available names: %v", name, err)
		}
	}
}
