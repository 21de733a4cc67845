package rollout

// ptr returns a pointer to v, or nil for the zero value: empty strings are stored as nulls.
func ptr[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}
