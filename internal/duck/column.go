package duck

// Column is a constant column that AppendTable adds in front of the appended
// rows, e.g. {Name: "step", Value: int64(3)}. Value follows the parameter
// binding rules of the package (int64, float64, string, bool, ...; not nil).
type Column struct {
	Name  string
	Value any
}
