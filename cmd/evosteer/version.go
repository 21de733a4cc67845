package main

import "runtime/debug"

// version is set by the Makefile (-ldflags -X main.version=...) to `git describe`.
var version string

// codeVersion names the code that produced a run: the linked-in version, else the VCS revision
// Go recorded at build time, else the module version.
func codeVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return info.Main.Version
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
