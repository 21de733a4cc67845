package schema_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/evosteer/evosteer-go/schema"
)

// Every table is a declared schema with a row type: write rows with their lineage (what wrote
// them, from which inputs), read them back checked (structure, checksums, value domains).
func ExampleWriteRows() {
	dir, err := os.MkdirTemp("", "schema-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "anchors.arrow")
	lin := schema.Lineage{Run: "demo", Step: 1, Stage: "aggregate"}
	rows := []schema.AnchorRow{
		{EpisodeID: "1/medqa-3/natural_reference/0", TaskID: "medqa-3", Family: "medqa", PHat: 0.25, Anchor: 0.9},
		{EpisodeID: "1/medqa-3/natural_reference/1", TaskID: "medqa-3", Family: "medqa", PHat: 0.25, LOO: true, Anchor: 0.7},
	}
	if err := schema.WriteRows(schema.Anchors, path, lin, rows); err != nil {
		panic(err)
	}
	back, err := schema.ReadFile[schema.AnchorRow](schema.Anchors, path)
	if err != nil {
		panic(err)
	}
	for _, r := range back {
		fmt.Printf("%s p̂ %.2f anchor %.1f loo %v\n", r.EpisodeID, r.PHat, r.Anchor, r.LOO)
	}

	// A value outside its domain is refused where it enters, naming the row and column, and the
	// file on disk is left as it was.
	rows[1].PHat = 1.5
	err = schema.WriteRows(schema.Anchors, path, lin, rows)
	fmt.Println(strings.TrimPrefix(err.Error(), "write "+path+": "))
	// Output:
	// 1/medqa-3/natural_reference/0 p̂ 0.25 anchor 0.9 loo false
	// 1/medqa-3/natural_reference/1 p̂ 0.25 anchor 0.7 loo true
	// row 1: column "p_hat": 1.5 is outside [0, 1]
}
