package rundir

import (
	"os"
	"sync"
	"time"

	"github.com/evosteer/evosteer-go/schema"
)

// fileHashes remembers the sha256 of the run's files that this process wrote or hashed, by
// path relative to the run folder, each with the identity the file had then (fileID). A step
// reads files earlier stages of the same process just wrote, and every one of them is verified
// against its manifest; hashing each again would make the verification cost grow with what the
// stages read. A remembered sum is used only while the file keeps its identity: rewriting it
// changes its change time (which no user call can set back; off Linux, its modification time
// and size stand for it), so a file replaced outside the
// pipeline is hashed afresh and caught. A new process (a resumed train) starts empty and
// hashes everything it verifies once.
type fileHashes struct {
	mu       sync.Mutex
	sums     map[string]hashed
	computed int // sha256 computations, for tests
}

type hashed struct {
	id  fileID
	sum string
}

// fileID is what identifies a file's content without reading it: size and modification time,
// and on Linux its device, inode and change time (fileid_linux.go).
type fileID struct {
	size     int64
	modified time.Time
	sys      sysID
}

func identify(fi os.FileInfo) fileID {
	return fileID{size: fi.Size(), modified: fi.ModTime(), sys: sysIdentity(fi)}
}

func newFileHashes() *fileHashes { return &fileHashes{sums: map[string]hashed{}} }

// sha256 returns the sha256 of the file at path (rel is its path in the run folder), from
// memory when the file is the one hashed before. A nil fileHashes always hashes.
func (h *fileHashes) sha256(path, rel string) (string, error) {
	if h == nil {
		return schema.SHA256File(path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	id := identify(fi)
	h.mu.Lock()
	got, ok := h.sums[rel]
	h.mu.Unlock()
	if ok && got.id == id {
		return got.sum, nil
	}
	sum, err := schema.SHA256File(path)
	if err != nil {
		return "", err
	}
	h.mu.Lock()
	h.sums[rel] = hashed{id, sum}
	h.computed++
	h.mu.Unlock()
	return sum, nil
}

// remember records the sum of a file this process just wrote, hashed before it was moved to
// path.
func (h *fileHashes) remember(path, rel, sum string) {
	if h == nil {
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		return // not remembered: the next reader hashes it
	}
	h.mu.Lock()
	h.sums[rel] = hashed{identify(fi), sum}
	h.mu.Unlock()
}
