package schema_test

import (
	"fmt"
	"os"
	"path/filepath"

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

	// A value outside its domain is refused where it enters, naming the file, row and column.
	rows[1].PHat = 1.5
	if err := schema.WriteRows(schema.Anchors, path, lin, rows); err != nil {
		panic(err)
	}
	_, err = schema.ReadFile[schema.AnchorRow](schema.Anchors, path)
	fmt.Println(err != nil)
	// Output:
	// 1/medqa-3/natural_reference/0 p̂ 0.25 anchor 0.9 loo false
	// 1/medqa-3/natural_reference/1 p̂ 0.25 anchor 0.7 loo true
	// true
}
