package main

import (
	"fmt"
	"os"
)

// pathFlag is a path a command was given and the flag that gave it.
type pathFlag struct{ flag, path string }

// refuseOverwrite refuses, before any work, an output that is one of the inputs by file identity
// (os.SameFile: the same path, a hard link or a symbolic link to an input is that input), so a
// command never replaces what it reads. An output that does not exist yet is no input; an empty
// input path (an unset flag) is skipped.
func refuseOverwrite(command string, outputs, inputs []pathFlag) error {
	for _, o := range outputs {
		ost, err := os.Stat(o.path)
		if err != nil {
			continue // not there yet; a path that cannot be written is reported by the write
		}
		for _, in := range inputs {
			if in.path == "" {
				continue
			}
			if ist, err := os.Stat(in.path); err == nil && os.SameFile(ost, ist) {
				return fmt.Errorf("%s: %s %s is the input %s %s (the same file), which writing would replace; give %s another path",
					command, o.flag, o.path, in.flag, in.path, o.flag)
			}
		}
	}
	return nil
}
