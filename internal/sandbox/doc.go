// Package sandbox runs untrusted Python programs: the python tool of agents (METHOD.md §2.5)
// and the hidden tests of code tasks (METHOD.md §6.2). Every call is a fresh `python3 -I`
// process in a private temporary folder with CPU, wall, address-space, file-size, open-file
// and process limits and a bound on the folder's total bytes, killed with its whole process
// group on timeout. The address-space limits of the runs at once are bounded together, across
// every Sandbox of the process with the same total (Config.MemoryTotal; by default half of the
// machine's memory): a run waits until its limit fits.
//
// Isolation is layered, each layer probed once and used when the host allows it: fresh network,
// PID and UTS namespaces (no network at all; every process dies with the call; the host's name
// out of reach), a private /proc in a mount namespace (host processes unseen), Landlock (writes
// only inside the temporary folder, reads only of system and interpreter paths, no TCP), and a
// seccomp filter installed before the program starts (socket(2) of every family and io_uring
// refused by the kernel, so ctypes cannot reach a host Unix socket either; socketpair(2), which
// asyncio needs, stays). Python-level socket blocking is always applied, the fallback when no
// kernel layer exists. One rule has no fallback: a program never runs as root. As root the
// sandbox runs programs as nobody (so the process limit binds), resolves an interpreter name to
// the first match on PATH that nobody can run, and refuses to start when there is none, naming
// the interpreter and the fix. Isolation reports what a Sandbox uses.
//
// Of what a program prints the first and last MiB of each stream are kept. A caller's input or
// reply of any size goes by file instead (RunFiles): files written beside main.py before the
// program starts, and files it leaves there read back after it ends (only its own plain files,
// never a link to another, each bounded by the file-size limit).
//
// It must not interpret what a program prints: callers decide what a result means. It imports no
// other project package: the graders (internal/tasks) and the executors both run programs here.
package sandbox
