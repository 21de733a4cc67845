// Package sandbox runs untrusted Python programs: the python tool of agents (METHOD.md §2.5)
// and the hidden tests of code tasks (METHOD.md §6.2). Every call is a fresh `python3 -I`
// process in a private temporary folder with CPU, wall, address-space, file-size, open-file
// and process limits and a bound on the folder's total bytes, killed with its whole process
// group on timeout.
//
// Isolation is layered, each layer probed once and used when the host allows it: fresh network
// and PID namespaces (no network at all; every process dies with the call), a private /proc in
// a mount namespace (host processes unseen), an unprivileged user (root only: nobody, so the
// process limit holds), and Landlock (writes only inside the temporary folder, reads only of
// system and interpreter paths, no TCP). Python-level socket blocking is always applied, the
// fallback when neither namespaces nor Landlock exist. Isolation reports what a Sandbox uses.
//
// It must not interpret what a program prints: callers decide what a result means. It imports no
// other project package: the graders (internal/tasks) and the executors both run programs here.
package sandbox
