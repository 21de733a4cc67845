package rundir

import (
	"os"
	"syscall"
)

// sysID is a file's device, inode and change time.
type sysID struct {
	dev, ino        uint64
	ctimeS, ctimeNS int64
}

func sysIdentity(fi os.FileInfo) sysID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return sysID{}
	}
	return sysID{dev: uint64(st.Dev), ino: uint64(st.Ino), ctimeS: int64(st.Ctim.Sec), ctimeNS: int64(st.Ctim.Nsec)}
}
