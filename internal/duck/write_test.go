//go:build duckdb_arrow

package duck

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/evosteer/evosteer-go/schema"
)

// A query result spans many 2,048-row DuckDB batches whose memory DuckDB frees when they are
// released; writing it through schema must keep every batch alive until it is encoded, cast
// DuckDB's types to the declared ones, and read back exactly.
func TestQueryResultWritesThroughSchema(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 10000
	rr, err := db.Query(ctx, `
		SELECT 'ep-' || i::VARCHAR AS episode_id, (i % 7)::INTEGER AS t,
		       -i / 1000.0 AS logp_theta, -i / 2000.0 AS logp_rho, -i / 2000.0 AS delta_l,
		       (i % 5 + 1)::INTEGER AS legal_count, 3::BIGINT AS theta_version
		FROM range($n) r(i)`, map[string]any{"n": n})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "scores.arrow")
	err = schema.Scores.Write(path, schema.Lineage{Run: "r", Step: 1, Stage: "rescore", ConfigSHA256: "c"}, rr)
	rr.Release()
	if err != nil {
		t.Fatal(err)
	}
	f, err := schema.Scores.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	back, err := f.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer back.Release()
	i := 0
	for back.Next() {
		rec := back.RecordBatch()
		ids := rec.Column(0).(*array.String)
		theta := rec.Column(2).(*array.Float64)
		for r := 0; r < int(rec.NumRows()); r++ {
			if want := fmt.Sprintf("ep-%d", i); ids.Value(r) != want || theta.Value(r) != -float64(i)/1000 {
				t.Fatalf("row %d: %q %g, want %q %g", i, ids.Value(r), theta.Value(r), want, -float64(i)/1000)
			}
			i++
		}
	}
	if back.Err() != nil || i != n {
		t.Fatalf("read %d rows, err %v", i, back.Err())
	}
}
