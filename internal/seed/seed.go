package seed

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// Derive returns (base + int(sha256(key)[:15 hex])) mod 2^63, the reference release's rule, with
// key the parts joined by "/".
func Derive(base uint64, parts ...string) uint64 {
	sum := sha256.Sum256([]byte(strings.Join(parts, "/")))
	h, err := strconv.ParseUint(hex.EncodeToString(sum[:])[:15], 16, 64)
	if err != nil {
		panic(err) // 15 hex digits always parse
	}
	return (base + h) & (1<<63 - 1)
}
