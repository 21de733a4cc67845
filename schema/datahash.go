package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// DataSHA256 is the sha256 of a file's rows and schema without its metadata (the lineage):
// two files with the same table, columns and values in the same batches have the same data
// hash whatever run, step, configuration or inputs their lineage names.
func DataSHA256(path string) (string, error) {
	f, err := Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	bare := arrow.NewSchema(f.Schema.Fields(), nil)
	h := sha256.New()
	fmt.Fprintf(h, "%s@%d\n", f.Table.Name, f.Version)
	w := ipc.NewWriter(h, ipc.WithSchema(bare))
	err = f.Table.EachBatch(path, func(rec arrow.RecordBatch) error {
		return w.Write(array.NewRecordBatch(bare, rec.Columns(), rec.NumRows()))
	})
	if err = errors.Join(err, w.Close()); err != nil {
		return "", fmt.Errorf("data sha256 of %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
