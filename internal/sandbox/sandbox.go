package sandbox

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"crypto/rand"
	"encoding/hex"
)

// Statuses of a run (reference text_tools.TOOL_STATUSES).
const (
	StatusSuccess   = "success"    // exit status 0
	StatusFailed    = "failed"     // nonzero exit or a fatal signal
	StatusTimeout   = "timeout"    // the wall or CPU limit was reached
	StatusToolError = "tool_error" // the sandbox itself could not run the program
)

// nobody is the unprivileged user programs run as when the sandbox runs as root.
const nobody = 65534

// readPaths may be read (and executed) under Landlock besides the interpreter's own prefixes.
var readPaths = []string{"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/proc", "/sys", "/dev"}

//go:embed boot.py
var boot string

// Limits bound one run.
type Limits struct {
	CPU      time.Duration // CPU time (RLIMIT_CPU, whole seconds, rounded up)
	Wall     time.Duration // wall time, after which the process group is killed
	Memory   int64         // address space in bytes (RLIMIT_AS)
	FileSize int64         // largest file the program may write, in bytes (RLIMIT_FSIZE)
	// Disk bounds the bytes of every file in the run's folder together (0: DiskFiles × FileSize).
	// It is measured every diskPoll and the program is killed when over, so it holds to within
	// what the program writes in one interval, against a runaway program; a program that hides
	// files from the parent (a folder it may write but not list) escapes the count.
	Disk      int64
	OpenFiles int // open file descriptors (RLIMIT_NOFILE)
	Processes int // processes and threads the program may add (RLIMIT_NPROC)
}

// DiskFiles is how many files of the largest size a run's folder may hold when Limits.Disk is 0.
const DiskFiles = 8

// disk is the bound on the run folder's bytes.
func (l Limits) disk() int64 {
	if l.Disk > 0 {
		return l.Disk
	}
	return DiskFiles * l.FileSize
}

func (l Limits) check() error {
	switch {
	case l.CPU < time.Second, l.Wall <= 0:
		return fmt.Errorf("limits: cpu %v must be >= 1s and wall %v > 0", l.CPU, l.Wall)
	case l.Memory < 64<<20:
		return fmt.Errorf("limits: memory %d bytes is below 64 MiB, too small for the interpreter", l.Memory)
	case l.FileSize < 1, l.OpenFiles < 16, l.Processes < 1:
		return fmt.Errorf("limits: file size %d, open files %d (>= 16), processes %d must be positive", l.FileSize, l.OpenFiles, l.Processes)
	case l.Disk < 0:
		return fmt.Errorf("limits: disk %d bytes must be >= 0 (0: %d × the file size)", l.Disk, DiskFiles)
	}
	return nil
}

// Layers names the isolation layers; in Config it switches layers off. Running as nobody when
// the sandbox runs as root is not a layer: it is never switched off.
type Layers struct {
	Namespaces bool // fresh network, PID and UTS namespaces
	Landlock   bool // Landlock filesystem and TCP confinement
	Seccomp    bool // a seccomp filter: no socket of any family, no io_uring
}

// Config configures a Sandbox.
type Config struct {
	Interpreter string // python executable, a path or a name looked up in PATH
	Limits      Limits // defaults of Run
	Concurrency int    // runs at once; further runs wait
	// MemoryTotal bounds the memory limits of the programs running at once, summed over every
	// Sandbox of the process with the same total; a run waits until its limit fits, and one
	// whose limit is above the total is refused. 0: half of the machine's memory, and at least
	// Limits.Memory.
	MemoryTotal int64
	TempDir     string // parent of the per-run folders; "" is os.TempDir()
	Disable     Layers // layers not to use even where the host supports them (tests of the fallbacks)
}

// Isolation says which layers a Sandbox uses.
type Isolation struct {
	Namespaces   bool // network, PID and UTS namespaces
	PrivateProc  bool // a mount namespace with its own /proc: the program sees only its processes
	UID          int  // the user programs run as: never 0
	Landlock     int  // Landlock ABI in use; 0 = none
	Seccomp      bool // socket(2) and io_uring refused by the kernel, whatever the program calls
	ProcessLimit bool // RLIMIT_NPROC holds
}

func (i Isolation) String() string {
	return fmt.Sprintf("namespaces=%t private_proc=%t uid=%d landlock=%d seccomp=%t process_limit=%t",
		i.Namespaces, i.PrivateProc, i.UID, i.Landlock, i.Seccomp, i.ProcessLimit)
}

// Sandbox runs programs; it is safe for concurrent use.
type Sandbox struct {
	python string
	limits Limits
	tmp    string
	slots  chan struct{}
	memory *budget // shared with every Sandbox of the same total
	iso    Isolation
	clone  uintptr
	userns bool    // the namespaces include a user namespace (not root)
	ns     uintptr // unshared after the clone: CLONE_NEWNS with a private /proc
}

// New checks the interpreter and probes which isolation layers the host allows.
func New(cfg Config) (*Sandbox, error) {
	if err := cfg.Limits.check(); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if cfg.Concurrency < 1 {
		return nil, fmt.Errorf("sandbox: concurrency %d must be >= 1", cfg.Concurrency)
	}
	total, err := memoryTotal(cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	tmp := cfg.TempDir
	if tmp == "" {
		tmp = os.TempDir()
	}
	s := &Sandbox{limits: cfg.Limits, tmp: tmp, slots: make(chan struct{}, cfg.Concurrency), memory: budgetOf(total)}
	s.iso.UID = os.Getuid()
	if os.Geteuid() == 0 {
		s.iso.UID = nobody // graded code never keeps root's privileges
	}
	if err := s.findInterpreter(cfg.Interpreter); err != nil {
		return nil, err
	}
	if !cfg.Disable.Namespaces {
		s.clone = syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS
		s.userns = os.Geteuid() != 0
		if s.userns {
			s.clone |= syscall.CLONE_NEWUSER
		}
		if _, err := s.probe(`pass`); err == nil {
			s.iso.Namespaces = true
		} else {
			s.clone, s.userns = 0, false
		}
	}
	s.iso.ProcessLimit = true
	if s.iso.Namespaces {
		// The host's /proc shows every host process, command lines and, to root, environments
		// (an API key); a fresh proc mount in the PID namespace shows the run's own. Mounting it
		// needs privilege in the namespaces, which a program run as nobody without a user
		// namespace lacks: then the host's /proc stays.
		s.ns = syscall.CLONE_NEWNS
		out, err := s.probe(mountProc + "print(sum(p.isdigit() for p in os.listdir('/proc')))")
		if n, _ := strconv.Atoi(out); err == nil && n >= 1 && n <= 2 {
			s.iso.PrivateProc = true
		} else {
			s.ns = 0
		}
	}
	if !cfg.Disable.Landlock {
		out, err := s.probe(`import ctypes; l = ctypes.CDLL(None, use_errno=True); l.syscall.restype = ctypes.c_long; print(max(0, l.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))))`)
		if err == nil {
			s.iso.Landlock, _ = strconv.Atoi(out)
		}
	}
	if !cfg.Disable.Seccomp {
		// The filter is installed by boot.py; a host that refuses it fails the probe's setup.
		s.iso.Seccomp = true
		res := s.run(context.Background(), newID(), "import socket\ntry:\n    socket.socket(socket.AF_UNIX)\nexcept PermissionError:\n    print('refused')\n", s.limits, Files{})
		s.iso.Seccomp = res.Status == StatusSuccess && strings.TrimSpace(res.Stdout) == "refused"
	}
	return s, nil
}

// findInterpreter resolves the configured interpreter to the program every run executes: a
// path, or a name looked up in PATH. As root, programs run as nobody, so the interpreter must be
// one nobody can run; a name resolves to the first match on PATH that nobody can run (a pyenv
// shim under /root cannot be), and where there is none New refuses, naming the fix.
func (s *Sandbox) findInterpreter(name string) error {
	var candidates []string
	if strings.ContainsRune(name, filepath.Separator) {
		candidates = []string{name}
	} else {
		for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
			if dir == "" {
				dir = "."
			}
			if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
				candidates = append(candidates, p)
			}
		}
		if len(candidates) == 0 {
			return fmt.Errorf("sandbox: interpreter %q: %w", name, exec.ErrNotFound)
		}
	}
	var refused []string
	for _, c := range candidates {
		abs, err := filepath.Abs(c)
		if err != nil {
			return fmt.Errorf("sandbox: interpreter %q: %w", name, err)
		}
		s.python = abs
		out, err := s.probe(`import os, sys; print(sys.version_info[0], os.getuid())`)
		if err == nil && out == "3 "+strconv.Itoa(s.iso.UID) {
			return nil
		}
		refused = append(refused, fmt.Sprintf("%s (%s)", abs, probeFailure(out, err)))
	}
	if s.iso.UID == nobody {
		return fmt.Errorf("sandbox: no interpreter %q that the unprivileged user nobody (uid %d) can run: %s; graded code never runs as root. "+
			"Install Python 3 where every user can run it (apt-get install python3) and point the interpreter setting at it (e.g. /usr/bin/python3), or make the interpreter's folders readable by others",
			name, nobody, strings.Join(refused, "; "))
	}
	return fmt.Errorf("sandbox: interpreter %q does not run Python 3: %s", name, strings.Join(refused, "; "))
}

func probeFailure(out string, err error) string {
	if err != nil {
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return lastLine(string(ee.Stderr))
		}
		return err.Error()
	}
	return fmt.Sprintf("printed %q", out)
}

// Isolation reports the layers in use.
func (s *Sandbox) Isolation() Isolation { return s.iso }

// Limits returns the default limits of Run.
func (s *Sandbox) Limits() Limits { return s.limits }

// attr is the process setup of every child: its own process group, killed with the parent,
// in the probed namespaces, as the probed user.
func (s *Sandbox) attr() *syscall.SysProcAttr {
	// Unsharing CLONE_NEWNS makes Go mark / private in the child, so the proc mount stays in it.
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: s.clone, Unshareflags: s.ns}
	if s.userns {
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	if s.iso.UID == nobody {
		a.Credential = &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}
	}
	return a
}

// probe runs a one-line program with the current setup and returns its trimmed output.
func (s *Sandbox) probe(code string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.python, "-I", "-c", code)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.SysProcAttr = s.attr()
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// Result is the outcome of one run.
type Result struct {
	ID          string        // the run's id, carried by each of its processes (environment and arguments)
	Status      string        // success | failed | timeout | tool_error
	ExitCode    int           // exit status, or minus the signal that ended the process
	Stdout      string        // what the program printed (head and tail of very long output)
	Stderr      string        // what it printed to standard error (same bound)
	Wall        time.Duration // wall time of the run, queueing excluded
	CPU         time.Duration // CPU time of the program's main process
	TimedOut    bool          // the wall limit ended it
	CPULimited  bool          // the CPU limit ended it
	DiskLimited bool          // its files outgrew Limits.Disk and it was killed
	Contained   bool          // no process of the run outlived it
	Error       string        // why the sandbox could not run the program (tool_error)
	// Files are the files named in Files.Out that the program left in its folder (RunFiles),
	// by name; one it did not write, or that is not a plain file of its own, is absent.
	Files map[string][]byte
}

// Files are the files of a run besides main.py (RunFiles): a way in and out that the bound on
// the output kept (the first and last MiB of each stream) does not cut.
type Files struct {
	// In are written beside main.py before the program starts, read-only to it. Their bytes
	// are added to the disk bound (Limits.Disk), which bounds what the program writes.
	In map[string][]byte
	// Out name files the program may write beside main.py. After it ends each comes back in
	// Result.Files when it is a regular file owned by the run's user with one link (never a
	// link to a file elsewhere), at most Limits.FileSize bytes (RLIMIT_FSIZE bounds it anyway).
	Out []string
}

// check refuses a name that is not a plain file name of the run's folder.
func (f Files) check() error {
	names := slices.Collect(maps.Keys(f.In))
	for _, name := range append(names, f.Out...) {
		if name == "" || name == "." || name == ".." || name == "main.py" || strings.ContainsAny(name, "/\x00") {
			return fmt.Errorf("files: %q is not a file name beside main.py", name)
		}
	}
	return nil
}

// Text is what an agent sees of a run: its output (standard error after standard output), or
// "(no output)", and a closing note for a timeout, a failure or a sandbox error.
func (r Result) Text(wallLimit time.Duration) string {
	text := r.Stdout
	if r.Stderr != "" {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += r.Stderr
	}
	if strings.TrimSpace(text) == "" {
		text = "(no output)"
	}
	var note string
	switch r.Status {
	case StatusTimeout:
		note = fmt.Sprintf("[stopped: the %d s time limit was reached]", int(math.Ceil(wallLimit.Seconds())))
	case StatusFailed:
		note = fmt.Sprintf("[exit status %d]", r.ExitCode)
		if r.DiskLimited {
			note = "[stopped: the program's files outgrew the sandbox's disk limit]"
		}
	case StatusToolError:
		note = "[sandbox error: " + r.Error + "]"
	}
	if note != "" {
		text = strings.TrimRight(text, " \t\r\n") + "\n" + note
	}
	return text
}

// Run runs code as main.py with the sandbox's default limits.
func (s *Sandbox) Run(ctx context.Context, code string) Result {
	return s.RunWith(ctx, code, s.limits)
}

// RunWith runs code as main.py in a fresh interpreter under lim. It waits for a free slot
// first, then until lim.Memory fits in the memory total (Config.MemoryTotal); a limit above
// the total or a cancelled context ends the run as a tool_error.
func (s *Sandbox) RunWith(ctx context.Context, code string, lim Limits) Result {
	return s.RunFiles(ctx, code, lim, Files{})
}

// RunFiles is RunWith with files in and out of the run's folder (Files): a caller's input or
// reply of any size up to the limits, kept apart from what the program prints.
func (s *Sandbox) RunFiles(ctx context.Context, code string, lim Limits, files Files) Result {
	id := newID()
	if err := lim.check(); err != nil {
		return Result{ID: id, Status: StatusToolError, Error: err.Error(), Contained: true}
	}
	if err := files.check(); err != nil {
		return Result{ID: id, Status: StatusToolError, Error: err.Error(), Contained: true}
	}
	if err := fits(lim.Memory, s.memory.total); err != nil {
		return Result{ID: id, Status: StatusToolError, Error: err.Error(), Contained: true}
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return Result{ID: id, Status: StatusToolError, Error: "cancelled while waiting: " + ctx.Err().Error(), Contained: true}
	}
	if err := s.memory.Acquire(ctx, lim.Memory); err != nil {
		return Result{ID: id, Status: StatusToolError, Error: "cancelled while waiting for memory: " + err.Error(), Contained: true}
	}
	defer s.memory.Release(lim.Memory)
	began := time.Now()
	res := s.run(ctx, id, code, lim, files)
	res.Wall = time.Since(began)
	return res
}

func newID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

func (s *Sandbox) run(ctx context.Context, id, code string, lim Limits, files Files) Result {
	res := Result{ID: id, Contained: true}
	fail := func(format string, args ...any) Result {
		res.Status, res.Error = StatusToolError, fmt.Sprintf(format, args...)
		return res
	}
	dir, err := os.MkdirTemp(s.tmp, "evosteer-python-")
	if err != nil {
		return fail("temporary folder: %v", err)
	}
	defer os.RemoveAll(dir)
	// The folder as created: the files handed back are read through it even if the program
	// renames the folder and puts a link in its place.
	folder, err := os.Open(dir)
	if err != nil {
		return fail("temporary folder: %v", err)
	}
	defer folder.Close()
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(code), 0o444); err != nil {
		return fail("write main.py: %v", err)
	}
	var given int64
	for name, data := range files.In {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o444); err != nil {
			return fail("write %s: %v", name, err)
		}
		given += int64(len(data))
	}
	if s.iso.UID == nobody {
		if err := os.Chown(dir, nobody, nobody); err != nil {
			return fail("temporary folder: %v", err)
		}
	}
	cfg, err := s.bootConfig(id, lim)
	if err != nil {
		return fail("%v", err)
	}
	cmd := exec.Command(s.python, "-I", "-B", "-u", "-X", "utf8", "-c", boot, cfg)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8",
		"OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1", "MKL_NUM_THREADS=1", "EVOSTEER_SANDBOX_RUN=" + id}
	cmd.SysProcAttr = s.attr()
	pipes, err := newPipes(3)
	if err != nil {
		return fail("pipes: %v", err)
	}
	defer pipes.closeReaders()
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = pipes.w[0], pipes.w[1], []*os.File{pipes.w[2]}
	if err := cmd.Start(); err != nil {
		pipes.closeWriters()
		return fail("start %s: %v", s.python, err)
	}
	pipes.closeWriters()
	outputs := pipes.collect()

	pid := cmd.Process.Pid
	var timedOut, cancelled, overDisk atomic.Bool
	kill := func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }
	timer := time.AfterFunc(lim.Wall, func() { timedOut.Store(true); kill() })
	stop := context.AfterFunc(ctx, func() { cancelled.Store(true); kill() })
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watchDisk(dir, lim.disk()+given, stopWatch, func() { overDisk.Store(true); kill() })
	}()
	werr := cmd.Wait()
	close(stopWatch)
	<-watched
	timer.Stop()
	stop()
	kill() // background processes of the group die with the call
	if !s.iso.Namespaces {
		res.Contained = sweep(id)
	}
	texts := outputs.wait(2 * time.Second)
	res.Stdout, res.Stderr = texts[0], texts[1]
	handshake := texts[2]
	res.Files = s.collectFiles(folder, files.Out, lim.FileSize)

	ps := cmd.ProcessState
	if ps == nil {
		return fail("wait: %v", werr)
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		res.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	ws := ps.Sys().(syscall.WaitStatus)
	res.ExitCode = ws.ExitStatus()
	if ws.Signaled() {
		res.ExitCode = -int(ws.Signal())
	}
	cpuLimit := time.Duration(math.Ceil(lim.CPU.Seconds())) * time.Second
	switch {
	case cancelled.Load():
		return fail("cancelled: %v", ctx.Err())
	case handshake != "ready" && !timedOut.Load():
		reason := strings.TrimPrefix(handshake, "error: ")
		if reason == "" {
			reason = fmt.Sprintf("the interpreter exited with status %d before the program started: %s", res.ExitCode, lastLine(res.Stderr))
		}
		return fail("setup: %s", reason)
	case timedOut.Load():
		res.Status, res.TimedOut = StatusTimeout, true
	case overDisk.Load():
		res.Status, res.DiskLimited = StatusFailed, true
	case ws.Signaled() && (ws.Signal() == syscall.SIGXCPU || ws.Signal() == syscall.SIGKILL && res.CPU >= cpuLimit-250*time.Millisecond):
		res.Status, res.CPULimited = StatusTimeout, true
	case res.ExitCode == 0:
		res.Status = StatusSuccess
	default:
		res.Status = StatusFailed
	}
	return res
}

// collectFiles reads the named files of the run's folder that are the program's own plain
// files: opened without following a link or blocking on a pipe, owned by the run's user, with
// one link (so none is another file of the host linked in), at most limit bytes each.
func (s *Sandbox) collectFiles(folder *os.File, names []string, limit int64) map[string][]byte {
	var out map[string][]byte
	for _, name := range names {
		fd, err := syscall.Openat(int(folder.Fd()), name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		f := os.NewFile(uintptr(fd), name)
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Nlink == 1 && int(st.Uid) == s.iso.UID {
			if data, err := io.ReadAll(io.LimitReader(f, limit)); err == nil {
				if out == nil {
					out = map[string][]byte{}
				}
				out[name] = data
			}
		}
		f.Close()
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// bootConfig is the bootstrap's argument: the limits and the confinement of one run.
func (s *Sandbox) bootConfig(id string, lim Limits) (string, error) {
	procs := int64(lim.Processes)
	if s.iso.UID != nobody {
		// RLIMIT_NPROC counts every task of the user, so the program gets Processes more.
		procs += int64(countTasks(s.iso.UID))
	}
	cpu := int64(math.Ceil(lim.CPU.Seconds()))
	cfg := map[string]any{
		"run": id,
		"rlimits": [][3]any{
			{"RLIMIT_CPU", cpu, cpu + 1}, // SIGXCPU first, SIGKILL a second later
			{"RLIMIT_AS", lim.Memory, lim.Memory},
			{"RLIMIT_FSIZE", lim.FileSize, lim.FileSize},
			{"RLIMIT_NOFILE", lim.OpenFiles, lim.OpenFiles},
			{"RLIMIT_NPROC", procs, procs},
			{"RLIMIT_CORE", 0, 0},
		},
		"landlock": s.iso.Landlock,
		"seccomp":  s.iso.Seccomp,
		"proc":     s.iso.PrivateProc,
		"read":     readPaths,
	}
	b, err := json.Marshal(cfg)
	return string(b), err
}

// pipes are the child's standard output, standard error and handshake channel.
type pipes struct{ r, w []*os.File }

func newPipes(n int) (*pipes, error) {
	p := &pipes{}
	for i := 0; i < n; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			p.closeReaders()
			p.closeWriters()
			return nil, err
		}
		p.r, p.w = append(p.r, r), append(p.w, w)
	}
	return p, nil
}

func (p *pipes) closeWriters() {
	for _, w := range p.w {
		w.Close()
	}
}

func (p *pipes) closeReaders() {
	for _, r := range p.r {
		r.Close()
	}
}

// captureBytes bounds what is kept of each stream: its head and its tail.
const captureBytes = 1 << 20

type collected struct {
	p    *pipes
	wg   sync.WaitGroup
	bufs []*headTail
}

// collect reads every pipe until its writers are gone.
func (p *pipes) collect() *collected {
	c := &collected{p: p}
	for _, r := range p.r {
		b := &headTail{limit: captureBytes}
		c.bufs = append(c.bufs, b)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			_, _ = io.Copy(b, r)
		}()
	}
	return c
}

// wait waits for the readers, at most grace: a process that escaped the call may hold a pipe.
func (c *collected) wait(grace time.Duration) []string {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		for _, r := range c.p.r {
			_ = r.SetReadDeadline(time.Now())
		}
		<-done
	}
	out := make([]string, len(c.bufs))
	for i, b := range c.bufs {
		out[i] = b.String()
	}
	return out
}

// headTail keeps the first and the last limit bytes written to it.
type headTail struct {
	limit   int
	head    []byte
	tail    []byte
	dropped int64
}

func (h *headTail) Write(p []byte) (int, error) {
	n := len(p)
	if room := h.limit - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	if len(p) > 0 {
		h.tail = append(h.tail, p...)
		if over := len(h.tail) - h.limit; over > 0 {
			h.dropped += int64(over)
			h.tail = append(h.tail[:0], h.tail[over:]...)
		}
	}
	return n, nil
}

func (h *headTail) String() string {
	if h.dropped == 0 {
		return string(h.head) + string(h.tail)
	}
	return string(h.head) + fmt.Sprintf("\n[... %d bytes omitted ...]\n", h.dropped) + string(h.tail)
}
