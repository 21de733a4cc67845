// Package mapfile maps a whole file read-only into memory, for the readers of files that are
// immutable once written (Arrow tables in schema, model weights in gpu/qwen3): the bytes are
// sliced in place instead of copied. Where the filesystem cannot map files (some FUSE and network
// filesystems) the file is read into memory instead, and a directory is refused as one.
//
// It is a leaf: it must not import any other package of the module.
package mapfile
