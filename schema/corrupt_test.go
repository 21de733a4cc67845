package schema

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// testdata/seeds holds one small real file of every table: a few rows of a file of a real run,
// rewritten with its lineage (TestWriteSeeds). They seed FuzzRead and TestFlipEveryByte.
const seedDir = "testdata/seeds"

// TestWriteSeeds regenerates testdata/seeds from the run folders in EVOSTEER_SEED_RUNS
// (colon-separated; made with `evosteer init`, `train`, `eval`, `probe` and `exact`, with
// author.start_step 1 so that skills, pairs and ledger rows exist). For each table it takes the
// file with the most rows and keeps up to 3 rows, chosen to show both null and set values of
// nullable columns and both values of boolean ones.
func TestWriteSeeds(t *testing.T) {
	runs := os.Getenv("EVOSTEER_SEED_RUNS")
	if runs == "" {
		t.Skip("set EVOSTEER_SEED_RUNS to regenerate testdata/seeds")
	}
	best := map[*Table]*File{}
	for _, dir := range strings.Split(runs, ":") {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".arrow") {
				return err
			}
			f, err := Open(p)
			if err != nil {
				return err
			}
			if b := best[f.Table]; b == nil || f.NumRows > b.NumRows {
				if b != nil {
					b.Close()
				}
				best[f.Table] = f
			} else {
				f.Close()
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tbl := range All() {
		f := best[tbl]
		if f == nil {
			t.Fatalf("no %s file in %s", tbl.Name, runs)
		}
		tab, err := f.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		rec := firstBatch(t, tab)
		rows := seedRows(rec, 3)
		var parts []arrow.RecordBatch
		for _, r := range rows {
			parts = append(parts, rec.NewSlice(int64(r), int64(r)+1))
		}
		if err := tbl.WriteBatches(filepath.Join(seedDir, tbl.Name+".arrow"), f.Lineage, parts...); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: rows %v of %s", tbl.Name, rows, f.Path)
		release(parts)
		rec.Release()
		tab.Release()
		f.Close()
	}
}

// firstBatch concatenates the table into one batch.
func firstBatch(t *testing.T, tab arrow.Table) arrow.RecordBatch {
	tr := array.NewTableReader(tab, tab.NumRows())
	defer tr.Release()
	if !tr.Next() {
		t.Fatal("empty table")
	}
	rec := tr.RecordBatch()
	rec.Retain()
	return rec
}

// seedRows picks up to n rows greedily, each adding the most unseen (column, null or not,
// boolean value) states; checkpoint rows with long lists are skipped to keep the file small.
func seedRows(rec arrow.RecordBatch, n int) []int {
	states := func(r int) []string {
		var s []string
		for c, col := range rec.Columns() {
			switch {
			case col.IsNull(r):
				s = append(s, fmt.Sprint(c, "null"))
			case col.DataType().ID() == arrow.BOOL:
				s = append(s, fmt.Sprint(c, col.(*array.Boolean).Value(r)))
			default:
				s = append(s, fmt.Sprint(c, "set"))
			}
		}
		return s
	}
	small := func(r int) bool {
		for _, col := range rec.Columns() {
			if l, ok := col.(*array.List); ok {
				if lo, hi := l.ValueOffsets(r); hi-lo > 64 {
					return false
				}
			}
		}
		return true
	}
	seen := map[string]bool{}
	var rows []int
	for len(rows) < n {
		pick, gain := -1, 0
		for r := range int(rec.NumRows()) {
			if slices.Contains(rows, r) || !small(r) {
				continue
			}
			g := 0
			for _, s := range states(r) {
				if !seen[s] {
					g++
				}
			}
			if pick < 0 || g > gain {
				pick, gain = r, g
			}
		}
		if pick < 0 {
			break
		}
		rows = append(rows, pick)
		for _, s := range states(pick) {
			seen[s] = true
		}
	}
	slices.Sort(rows)
	return rows
}

// seeds returns the seed files by table name.
func seeds(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for _, tbl := range All() {
		out[tbl.Name] = readBytes(t, filepath.Join(seedDir, tbl.Name+".arrow"))
	}
	return out
}

// readData opens data as path and reads every batch; it returns the batches read (the caller
// releases them) or the first error. Any panic fails the test.
func readData(path string, data []byte) ([]arrow.RecordBatch, *File, error) {
	f, err := openData(path, data, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	rr, err := f.Reader()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	defer rr.Release()
	var recs []arrow.RecordBatch
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rr.Err(); err != nil {
		release(recs)
		f.Close()
		return nil, nil, err
	}
	return recs, f, nil
}

// TestFlipEveryByte inverts each byte of a small real file of every table in turn. Each read
// must fail with an error naming the file, or succeed with the original rows and lineage: no
// panic, no fatal error (arrow-go used to allocate a terabyte from a flipped length), no
// silently different values.
func TestFlipEveryByte(t *testing.T) {
	for name, data := range seeds(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("run", "step-000001", name+".arrow")
			want, f0, err := readData(path, bytes.Clone(data))
			if err != nil {
				t.Fatal(err)
			}
			defer release(want)
			defer f0.Close()
			var fails, same int
			for pos := range data {
				bad := bytes.Clone(data)
				bad[pos] ^= 0xff
				got, f, err := readData(path, bad)
				if err != nil {
					if !strings.HasPrefix(err.Error(), "open "+path+": ") && !strings.HasPrefix(err.Error(), "read "+path+": ") {
						t.Errorf("byte %d: error %q does not name the file", pos, err)
					}
					fails++
					continue
				}
				if !sameBatches(got, want) || !reflect.DeepEqual(f.Lineage, f0.Lineage) {
					t.Errorf("byte %d: the file reads without error but with different rows or lineage", pos)
				}
				release(got)
				f.Close()
				same++
			}
			t.Logf("%d bytes: %d flips refused, %d harmless (padding, unread fields)", len(data), fails, same)
		})
	}
}

func sameBatches(a, b []arrow.RecordBatch) bool {
	return slices.EqualFunc(a, b, func(x, y arrow.RecordBatch) bool { return array.RecordEqual(x, y) })
}

// FuzzRead opens and reads arbitrary bytes as a table file: every outcome is rows or an error
// naming the file. `go test` runs the seeds (one real file of every table); `make fuzz` mutates
// them.
func FuzzRead(f *testing.F) {
	for _, data := range seeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "fuzz.arrow"
		recs, file, err := readData(path, data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "open "+path+": ") && !strings.HasPrefix(err.Error(), "read "+path+": ") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		release(recs)
		file.Close()
	})
}

// TestLineageEditsCaught: the footer has no checksum, so a changed character in a lineage value
// that still parses (run, step, stage, config hash, an input's hash) would go unnoticed in one
// copy; Open compares the footer's copy with the schema message's, and a file whose bytes
// differ from those a stage recorded is also caught by the step manifest's sha256 of the file
// (rundir.Folder.Verify) before training resumes.
func TestLineageEditsCaught(t *testing.T) {
	data := seeds(t)["episodes"]
	f, err := openData("episodes.arrow", bytes.Clone(data), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := f.Lineage
	f.Close()
	inputs, err := canonicalJSON(l.Inputs)
	if err != nil || len(l.Inputs) == 0 {
		t.Fatalf("inputs %v: %v", l.Inputs, err)
	}
	hashAt := strings.Index(inputs, `":"`) + 3 // the first input's sha256
	for _, c := range []struct {
		v     string
		edits []int // positions in v
	}{
		{l.Run, []int{0}}, {fmt.Sprint(l.Step), []int{0}}, {l.Stage, []int{0, len(l.Stage) - 1}},
		{l.ConfigSHA256, []int{0, 63}}, {inputs, []int{hashAt, hashAt + 63}},
	} {
		// A flatbuffer string: its length, then its bytes.
		stored := binary.LittleEndian.AppendUint32(nil, uint32(len(c.v)))
		stored = append(stored, c.v...)
		first, last := bytes.Index(data, stored), bytes.LastIndex(data, stored)
		if first < 0 || first == last {
			t.Fatalf("lineage value %q is not stored twice", c.v)
		}
		for _, at := range []int{first + 4, last + 4} { // the schema message's copy, the footer's
			for _, e := range c.edits {
				bad := bytes.Clone(data)
				switch ch := bad[at+e]; { // another character the value may hold
				case ch >= '0' && ch <= '9':
					bad[at+e] = '0' + (ch-'0'+1)%10
				case ch == 'x':
					bad[at+e] = 'y'
				default:
					bad[at+e] = 'x'
				}
				_, err := openData("episodes.arrow", bad, nil, nil)
				if err == nil || !strings.Contains(err.Error(), "lineage") {
					t.Errorf("%q changed at byte %d: error %v, want the lineage mismatch", c.v, at+e, err)
				}
			}
		}
	}
}

// TestCheckFrame: a buffer's uncompressed length must be one its zstd frame can produce, as
// arrow-go allocates it before decompressing.
func TestCheckFrame(t *testing.T) {
	data := seeds(t)["decisions"]
	ft, err := readFooter(data)
	if err != nil {
		t.Fatal(err)
	}
	info, err := readBatch(data, ft.blocks[0])
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for _, sp := range info.buffers {
		if sp[1] > int64(len(buf)) {
			buf = info.body[sp[0] : sp[0]+sp[1]]
		}
	}
	size := binary.LittleEndian.Uint64(buf)
	for _, c := range []struct {
		name string
		edit func(b []byte) []byte
		want string
	}{
		{"as written", func(b []byte) []byte { return b }, ""},
		{"a terabyte", func(b []byte) []byte { binary.LittleEndian.PutUint64(b, 1<<40); return b }, "holds at most"},
		{"beyond its block", func(b []byte) []byte { binary.LittleEndian.PutUint64(b, size+1<<17+1); return b }, "holds at most"},
		{"negative", func(b []byte) []byte { binary.LittleEndian.PutUint64(b, 1<<63); return b }, "holds at most"},
		{"stored raw", func(b []byte) []byte { binary.LittleEndian.PutUint64(b, ^uint64(0)); return b }, "holds at most"},
		{"no checksum", func(b []byte) []byte { b[12] &^= 0x04; return b }, "without a content checksum"},
		{"trailing byte", func(b []byte) []byte { return append(b, 0) }, "zstd frame of"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, "zstd frame of"},
		{"not zstd", func(b []byte) []byte { b[8] ^= 1; return b }, "not a zstd frame"},
	} {
		err := checkFrame(c.edit(bytes.Clone(buf)))
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}
