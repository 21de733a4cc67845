package textrules

// Tokens is the token length the budget charges for a text: ceil(bytes/4).
func Tokens(s string) int64 { return (int64(len(s)) + 3) / 4 }
