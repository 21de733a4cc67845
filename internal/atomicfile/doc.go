// Package atomicfile writes files so that a reader, or a crash, never sees a partial one: the
// content goes to a temporary file in the same folder, is fsynced, and is renamed into place.
//
// It must not know about file formats (it imports no other project package: schema writes
// through it); callers pass a function that writes the content.
package atomicfile
