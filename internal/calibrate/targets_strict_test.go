package calibrate

import (
	"strings"
	"testing"
)

// TestTargetsAreReadStrictly: a repeated header column, a number outside plain decimal notation
// (digit separators, hexadecimal, infinities, signs) and a row with more or fewer fields than
// the header are refused, naming the file, line and field; a UTF-8 byte-order mark and CRLF
// line ends, as spreadsheets write them, are read.
func TestTargetsAreReadStrictly(t *testing.T) {
	for _, c := range []struct{ name, csv, want string }{
		{"repeated column", "benchmark,policy,score,score\nhotpotqa,direct,50,60\n", `t.csv:1:24: column "score" repeats column 3`},
		{"repeated column, case and spaces", "benchmark,policy,score, Policy\nhotpotqa,direct,50,x\n", `t.csv:1:24: column "policy" repeats column 2`},
		{"digit separator", "benchmark,policy,score\nhotpotqa,direct,5_0\n", `t.csv:2:17: column "score": "5_0" is not a score in [0, 100]`},
		{"hexadecimal float", "benchmark,policy,score\nhotpotqa,direct,0x1p5\n", `column "score": "0x1p5"`},
		{"infinity std", "benchmark,policy,score,std\nhotpotqa,direct,50,Inf\n", `column "std": "Inf"`},
		{"signed score", "benchmark,policy,score\nhotpotqa,direct,+50\n", `column "score": "+50"`},
		{"separator in n", "benchmark,policy,score,n\nhotpotqa,direct,50,1_28\n", `column "n": "1_28"`},
		{"extra field", "benchmark,policy,score\nhotpotqa,direct,50,7\n", `t.csv:2: 4 fields, the header has 3`},
		{"missing field", "benchmark,policy,score,std\nhotpotqa,direct,50\n", `t.csv:2: 3 fields, the header has 4`},
	} {
		_, err := parseTargets("t.csv", []byte(c.csv))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	tg, err := parseTargets("t.csv", []byte("\ufeffbenchmark,policy,score,std\r\nhotpotqa,direct,50.5,1e-1\r\nnq_open,reference,.5,\r\n"))
	if err != nil {
		t.Fatalf("BOM and CRLF: %v", err)
	}
	if len(tg.Cells) != 2 || tg.Cells[0].Score != 50.5 || tg.Cells[0].Std != 0.1 || tg.Cells[1].Score != 0.5 || tg.Cells[1].Line != 3 {
		t.Fatalf("BOM and CRLF: %+v", tg.Cells)
	}
}
