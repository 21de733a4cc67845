//go:build !duckdb_arrow

package duck

import (
	"context"
	"strings"
	"testing"
)

func TestOpenWithoutTagSaysHowToRebuild(t *testing.T) {
	db, err := Open(context.Background())
	if err == nil || db != nil {
		t.Fatalf("Open without the duckdb_arrow tag: db=%v err=%v, want an error", db, err)
	}
	for _, want := range []string{"duckdb_arrow", `go build -tags duckdb_arrow`, "make build"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
