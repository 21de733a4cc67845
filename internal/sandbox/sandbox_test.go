package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testPython is the interpreter of the tests: EVOSTEER_SANDBOX_PYTHON (CI points it at
// Debian's /usr/bin/python3, which the unprivileged user can run), else python3.
func testPython() string {
	if p := os.Getenv("EVOSTEER_SANDBOX_PYTHON"); p != "" {
		return p
	}
	return "python3"
}

// testLimits are generous in wall time (the test machine may be loaded) and small elsewhere.
var testLimits = Limits{CPU: 5 * time.Second, Wall: 60 * time.Second, Memory: 512 << 20, FileSize: 1 << 20, OpenFiles: 64, Processes: 32}

func newSandbox(t *testing.T, disable Layers) *Sandbox {
	t.Helper()
	s, err := New(Config{Interpreter: testPython(), Limits: testLimits, Concurrency: 2, Disable: disable})
	if err != nil {
		t.Skipf("no usable python interpreter: %v", err)
	}
	t.Logf("isolation: %v", s.Isolation())
	return s
}

// modes are the full isolation of the host and the fallback without kernel confinement.
func modes(t *testing.T) map[string]*Sandbox {
	return map[string]*Sandbox{
		"full":     newSandbox(t, Layers{}),
		"fallback": newSandbox(t, Layers{Namespaces: true, Landlock: true, Seccomp: true}),
	}
}

// assertGone checks that no process of a run is alive.
func assertGone(t *testing.T, res Result) {
	t.Helper()
	pids, err := findRun(res.ID)
	if err != nil {
		t.Skipf("cannot check processes: %v", err)
	}
	if len(pids) > 0 || !res.Contained {
		t.Fatalf("run %s left processes %v (contained=%t)", res.ID, pids, res.Contained)
	}
}

func TestSuccessOutputAndStatuses(t *testing.T) {
	for name, s := range modes(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			res := s.Run(ctx, "import sys\nprint(6 * 7)\nprint('warn', file=sys.stderr)")
			if res.Status != StatusSuccess || res.Stdout != "42\n" || res.Stderr != "warn\n" || res.ExitCode != 0 {
				t.Fatalf("%+v", res)
			}
			if got := res.Text(15 * time.Second); got != "42\nwarn\n" {
				t.Fatalf("text %q", got)
			}
			res = s.Run(ctx, "raise ValueError('boom')")
			if res.Status != StatusFailed || res.ExitCode != 1 || !strings.Contains(res.Stderr, "ValueError: boom") ||
				strings.Contains(res.Stderr, "_evosteer") {
				t.Fatalf("%+v", res)
			}
			if !strings.HasSuffix(res.Text(15*time.Second), "ValueError: boom\n[exit status 1]") {
				t.Fatalf("text %q", res.Text(15*time.Second))
			}
			res = s.Run(ctx, "def broken(:\n")
			if res.Status != StatusFailed || !strings.Contains(res.Stderr, "SyntaxError") {
				t.Fatalf("%+v", res)
			}
			if res := s.Run(ctx, "import sys; sys.exit(3)"); res.Status != StatusFailed || res.ExitCode != 3 {
				t.Fatalf("%+v", res)
			}
			if res := s.Run(ctx, "pass"); res.Text(time.Second) != "(no output)" {
				t.Fatalf("%q", res.Text(time.Second))
			}
			// The program runs in its own folder, with nothing of the caller's environment.
			res = s.Run(ctx, "import os\nprint(os.getcwd() == os.environ['HOME'] == os.environ['TMPDIR'])\nprint('PYTHONPATH' in os.environ)")
			if res.Stdout != "True\nFalse\n" {
				t.Fatalf("%+v", res)
			}
		})
	}
}

func TestInfiniteLoopIsStoppedByTheCPULimit(t *testing.T) {
	for name, s := range modes(t) {
		t.Run(name, func(t *testing.T) {
			lim := testLimits
			lim.CPU = 1 * time.Second
			res := s.RunWith(context.Background(), "while True:\n    pass\n", lim)
			if res.Status != StatusTimeout || !res.CPULimited || res.TimedOut {
				t.Fatalf("%+v", res)
			}
			assertGone(t, res)
			if !strings.Contains(res.Text(15*time.Second), "[stopped: the 15 s time limit was reached]") {
				t.Fatalf("text %q", res.Text(15*time.Second))
			}
		})
	}
}

func TestSleeperIsKilledAtTheWallLimit(t *testing.T) {
	for name, s := range modes(t) {
		t.Run(name, func(t *testing.T) {
			lim := testLimits
			lim.Wall = 5 * time.Second
			began := time.Now()
			res := s.RunWith(context.Background(), "import subprocess, time\nsubprocess.Popen(['sleep', '300'])\nprint('started', flush=True)\ntime.sleep(300)\n", lim)
			if res.Status != StatusTimeout || !res.TimedOut || res.Stdout != "started\n" {
				t.Fatalf("%+v", res)
			}
			if d := time.Since(began); d > 30*time.Second {
				t.Fatalf("took %v", d)
			}
			assertGone(t, res)
		})
	}
}

func TestBackgroundProcessesDieWithTheCall(t *testing.T) {
	// A double fork with setsid leaves the process group; it must die with the call all the same.
	code := `import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(300)
    os._exit(0)
if os.fork() == 0:
    time.sleep(300)
print('parent done')
`
	for name, s := range modes(t) {
		t.Run(name, func(t *testing.T) {
			res := s.Run(context.Background(), code)
			if res.Status != StatusSuccess || res.Stdout != "parent done\n" {
				t.Fatalf("%+v", res)
			}
			assertGone(t, res)
		})
	}
}

// TestCodeNeverRunsWithPrivileges: with the interpreter found the way the default configuration
// finds it ("python3" on PATH, which here may be a pyenv shim under /root), a program runs as an
// unprivileged user with no capability, cannot rename the host, and meets the process limit. As
// root, an interpreter the unprivileged user cannot run is refused, naming it and the fix.
func TestCodeNeverRunsWithPrivileges(t *testing.T) {
	s, err := New(Config{Interpreter: "python3", Limits: testLimits, Concurrency: 1})
	if err != nil {
		t.Fatalf("the default interpreter: %v", err)
	}
	iso := s.Isolation()
	t.Logf("interpreter %s, isolation %v", s.python, iso)
	if iso.UID == 0 || !iso.ProcessLimit {
		t.Fatalf("programs run as uid %d (process limit %t)", iso.UID, iso.ProcessLimit)
	}
	host, _ := os.Hostname()
	res := s.Run(context.Background(), `import os, socket
caps = [l.split()[1] for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapPrm', 'CapAmb'))]
print(os.getuid(), os.geteuid(), *caps)
try:
    socket.sethostname('evosteer-escaped')
    print('renamed')
except OSError as e:
    print('refused', e.errno)
`)
	want := fmt.Sprintf("%d %d 0000000000000000 0000000000000000 0000000000000000\nrefused", iso.UID, iso.UID)
	if res.Status != StatusSuccess || !strings.HasPrefix(res.Stdout, want) {
		t.Errorf("got %+v, want output starting %q", res, want)
	}
	if now, _ := os.Hostname(); now != host {
		t.Errorf("the host was renamed from %q to %q", host, now)
	}
	if os.Geteuid() != 0 {
		return // the refusal below concerns root, whose programs run as nobody
	}
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil { // nobody cannot enter it
		t.Fatal(err)
	}
	shim := filepath.Join(private, "python3")
	if err := os.WriteFile(shim, []byte("#!/bin/sh\nexec python3 \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Interpreter: shim, Limits: testLimits, Concurrency: 1})
	if err == nil || !strings.Contains(err.Error(), shim) || !strings.Contains(err.Error(), "never runs as root") {
		t.Errorf("an interpreter nobody cannot run: %v", err)
	}
}

func TestForkBombIsContained(t *testing.T) {
	s := newSandbox(t, Layers{})
	if !s.Isolation().ProcessLimit {
		t.Fatalf("the process limit does not bind: %v", s.Isolation())
	}
	lim := testLimits
	lim.Wall = 5 * time.Second
	code := `import os, time
refused = 0
while True:
    try:
        os.fork()
    except OSError:
        refused += 1
        if refused % 50 == 0:
            print('fork refused', flush=True)
        time.sleep(0.01)
`
	res := s.RunWith(context.Background(), code, lim)
	if res.Status != StatusTimeout || !res.TimedOut || !strings.Contains(res.Stdout, "fork refused") {
		t.Fatalf("%+v", res)
	}
	assertGone(t, res)
}

func TestMemoryBombIsRefused(t *testing.T) {
	for name, s := range modes(t) {
		t.Run(name, func(t *testing.T) {
			for _, code := range []string{
				"x = bytearray(8 << 30)\n",
				"chunks = []\nwhile True:\n    chunks.append(bytearray(32 << 20))\n",
			} {
				res := s.Run(context.Background(), code)
				if res.Status != StatusFailed || !strings.Contains(res.Stderr, "MemoryError") {
					t.Fatalf("%q: %+v", code, res)
				}
				assertGone(t, res)
			}
		})
	}
}

// listen serves connections on a network until the test ends and reports each one it accepts.
func listen(t *testing.T, network, address string) (net.Listener, chan struct{}) {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	return ln, accepted
}

// TestNetworkIsUnreachable: no program reaches a host TCP listener or a host Unix socket, through
// Python or through libc with ctypes. In full isolation the kernel refuses socket(2) itself
// (seccomp); the fallback without kernel layers blocks Python's socket API. asyncio, which needs
// only socketpair(2), works in both, and the Python guard never recurses.
func TestNetworkIsUnreachable(t *testing.T) {
	tcp, tcpAccepted := listen(t, "tcp", "127.0.0.1:0")
	port := tcp.Addr().(*net.TCPAddr).Port
	sockDir, err := os.MkdirTemp("", "evosteer-unix-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	os.Chmod(sockDir, 0o777)
	path := filepath.Join(sockDir, "host.sock")
	_, unixAccepted := listen(t, "unix", path)
	os.Chmod(path, 0o777) // file permissions let anyone connect: only the sandbox may refuse
	python := map[string]string{
		"python tcp":  fmt.Sprintf("import socket\nsocket.create_connection(('127.0.0.1', %d), timeout=5)\nprint('connected')\n", port),
		"python unix": fmt.Sprintf("import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect(%q)\nprint('connected')\n", path),
	}
	// libc through ctypes bypasses Python; only kernel layers stop it.
	libc := map[string]string{
		"libc tcp": fmt.Sprintf(`import ctypes, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
assert fd >= 0, 'socket failed, errno %%d' %% ctypes.get_errno()
addr = struct.pack('=HH4s8x', socket.AF_INET, socket.htons(%d), bytes([127, 0, 0, 1]))
assert libc.connect(fd, addr, len(addr)) == 0, 'connect failed, errno %%d' %% ctypes.get_errno()
print('connected')
`, port),
		"libc unix": fmt.Sprintf(`import ctypes, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0)
assert fd >= 0, 'socket failed, errno %%d' %% ctypes.get_errno()
addr = struct.pack('=H108s', socket.AF_UNIX, %q.encode())
assert libc.connect(fd, addr, len(addr)) == 0, 'connect failed, errno %%d' %% ctypes.get_errno()
print('connected')
`, path),
	}
	asyncio := "import asyncio\nasync def main():\n    return 42\nprint(asyncio.run(main()))\n"
	for name, s := range map[string]*Sandbox{
		"full":     newSandbox(t, Layers{}),
		"fallback": newSandbox(t, Layers{Namespaces: true, Landlock: true, Seccomp: true}),
	} {
		t.Run(name, func(t *testing.T) {
			iso := s.Isolation()
			if name == "full" && !iso.Seccomp {
				t.Errorf("no seccomp filter on this host: %v", iso)
			}
			for what, code := range python {
				res := s.Run(context.Background(), code)
				if res.Status != StatusFailed || strings.Contains(res.Stdout, "connected") || strings.Contains(res.Stderr, "RecursionError") ||
					!strings.Contains(res.Stderr, "PermissionError") {
					t.Errorf("%s: %+v", what, res)
				}
			}
			for what, code := range libc {
				if !iso.Seccomp && (what == "libc unix" || !iso.Namespaces && iso.Landlock < 4) {
					continue // the fallback: Python-level blocking only
				}
				res := s.Run(context.Background(), code)
				if res.Status != StatusFailed || strings.Contains(res.Stdout, "connected") || !strings.Contains(res.Stderr, "failed, errno") {
					t.Errorf("%s: %+v", what, res)
				}
				if iso.Seccomp && !strings.Contains(res.Stderr, "socket failed, errno 13") {
					t.Errorf("%s: socket(2) was not refused by the kernel: %s", what, lastLine(res.Stderr))
				}
			}
			if res := s.Run(context.Background(), asyncio); res.Status != StatusSuccess || res.Stdout != "42\n" {
				t.Errorf("asyncio: %+v", res)
			}
			select {
			case <-tcpAccepted:
				t.Error("the TCP listener accepted a connection from the sandbox")
			case <-unixAccepted:
				t.Error("the Unix socket accepted a connection from the sandbox")
			case <-time.After(100 * time.Millisecond):
			}
		})
	}
}

func TestWritesOutsideTheTemporaryFolderAreRefused(t *testing.T) {
	// A world-writable folder: only confinement, not file permissions, keeps the program out.
	target, err := os.MkdirTemp("", "evosteer-escape-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(target)
	if err := os.Chmod(target, 0o777); err != nil {
		t.Fatal(err)
	}
	escape := filepath.Join(target, "escaped.txt")
	code := fmt.Sprintf("open(%q, 'w').write('x')\nprint('wrote')\n", escape)
	local := "open('inside.txt', 'w').write('ok')\nprint(open('inside.txt').read())\n"
	s := newSandbox(t, Layers{})
	if s.Isolation().Landlock == 0 {
		t.Skip("Landlock is unavailable: writes outside the temporary folder are limited only by file permissions")
	}
	if res := s.Run(context.Background(), local); res.Status != StatusSuccess || res.Stdout != "ok\n" {
		t.Fatalf("write inside: %+v", res)
	}
	res := s.Run(context.Background(), code)
	if res.Status != StatusFailed || !strings.Contains(res.Stderr, "PermissionError") {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Stat(escape); !os.IsNotExist(err) {
		t.Fatalf("the file outside was written: %v", err)
	}
	// Reading outside the system paths is refused too (the task files, the run folder).
	secret := filepath.Join(target, "secret.txt")
	if err := os.WriteFile(secret, []byte("gold"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := s.Run(context.Background(), fmt.Sprintf("print(open(%q).read())", secret)); res.Status != StatusFailed || strings.Contains(res.Stdout, "gold") {
		t.Fatalf("read outside: %+v", res)
	}
}

func TestFileSizeLimit(t *testing.T) {
	s := newSandbox(t, Layers{})
	res := s.Run(context.Background(), "f = open('big.bin', 'wb')\nf.write(b'x' * (4 << 20))\nf.close()\n")
	if res.Status != StatusFailed || !strings.Contains(res.Stderr, "File too large") && res.ExitCode != -25 {
		t.Fatalf("%+v", res)
	}
}

func TestOpenFileLimit(t *testing.T) {
	s := newSandbox(t, Layers{})
	res := s.Run(context.Background(), "fs = [open('f%d' % i, 'w') for i in range(200)]\n")
	if res.Status != StatusFailed || !strings.Contains(res.Stderr, "Too many open files") {
		t.Fatalf("%+v", res)
	}
}

func TestCancelledContextIsAToolError(t *testing.T) {
	s := newSandbox(t, Layers{})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	res := s.Run(ctx, "import time\ntime.sleep(300)\n")
	if res.Status != StatusToolError || !strings.Contains(res.Error, "cancelled") {
		t.Fatalf("%+v", res)
	}
	assertGone(t, res)
}

func TestMissingInterpreterFailsAtNew(t *testing.T) {
	_, err := New(Config{Interpreter: "/nonexistent/python3", Limits: testLimits, Concurrency: 1})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/python3") {
		t.Fatalf("got %v", err)
	}
	if _, err := New(Config{Interpreter: testPython(), Limits: Limits{}, Concurrency: 1}); err == nil {
		t.Fatal("zero limits accepted")
	}
}

func TestOutputIsBoundedHeadAndTail(t *testing.T) {
	h := &headTail{limit: 4}
	for _, s := range []string{"ab", "cdef", "ghij", "kl"} {
		h.Write([]byte(s))
	}
	if got := h.String(); got != "abcd\n[... 4 bytes omitted ...]\nijkl" {
		t.Fatalf("%q", got)
	}
}

// RLIMIT_FSIZE bounds each file; Limits.Disk bounds them together: a program that writes file
// after file is killed once its folder holds more than 8 × FileSize, well before its wall limit.
func TestDiskLimit(t *testing.T) {
	for name, s := range modes(t) {
		t.Run(name, func(t *testing.T) {
			lim := s.Limits()
			lim.Wall = 10 * time.Second
			code := "import time\nfor i in range(200):\n    open('f%d' % i, 'wb').write(b'x' * (512 << 10))\n    time.sleep(0.005)\ntime.sleep(60)\n"
			res := s.RunWith(context.Background(), code, lim)
			if res.Status != StatusFailed || !res.DiskLimited || res.TimedOut || !strings.Contains(res.Text(lim.Wall), "disk limit") {
				t.Fatalf("%+v", res)
			}
		})
	}
}

// Where the host allows a private /proc, a program sees only its own processes: not the host's
// (their command lines and, to root, their environments, which hold API keys).
func TestHostProcessesAreInvisible(t *testing.T) {
	s := newSandbox(t, Layers{})
	if !s.Isolation().PrivateProc {
		t.Skip("this host allows no private /proc")
	}
	code := fmt.Sprintf("import os\nprint(sum(p.isdigit() for p in os.listdir('/proc')), os.path.exists('/proc/%d'))\n", os.Getpid())
	res := s.Run(context.Background(), code)
	if res.Status != StatusSuccess || strings.TrimSpace(res.Stdout) != "1 False" {
		t.Fatalf("%+v", res)
	}
}

// Files go in and come back whole, past the bound on what a run's output keeps (its first and
// last MiB): a 3 MiB input and a 3 MiB reply. What comes back is only the program's own plain
// files: a link to a file elsewhere, a pipe, a second link to a file and a name the program
// did not write are absent; a name that is not a file of the run's folder is refused.
func TestFilesInAndOut(t *testing.T) {
	for name, s := range modes(t) {
		t.Run(name, func(t *testing.T) {
			lim := s.Limits()
			lim.FileSize = 4 << 20
			in := strings.Repeat("0123456789abcdef", 3<<16)
			code := `import os
data = open('request.txt').read()
open('reply.txt', 'w').write(data[::-1])
print('x' * (3 << 20))
os.symlink('/etc/passwd', 'link.txt')
os.mkfifo('fifo.txt')
open('once.txt', 'w').write('one')
os.link('once.txt', 'twice.txt')
`
			res := s.RunFiles(context.Background(), code, lim, Files{In: map[string][]byte{"request.txt": []byte(in)},
				Out: []string{"reply.txt", "link.txt", "fifo.txt", "twice.txt", "once.txt", "missing.txt"}})
			if res.Status != StatusSuccess {
				t.Fatalf("%+v", res.Stderr)
			}
			reply := res.Files["reply.txt"]
			if len(reply) != len(in) || string(reply[:16]) != "fedcba9876543210" {
				t.Fatalf("reply: %d bytes, want %d", len(reply), len(in))
			}
			if len(res.Files) != 1 {
				t.Fatalf("files back: %d, want only reply.txt", len(res.Files))
			}
			for _, bad := range []string{"../x", "main.py", "", "a/b"} {
				if res := s.RunFiles(context.Background(), "pass", lim, Files{Out: []string{bad}}); res.Status != StatusToolError {
					t.Fatalf("name %q: %+v", bad, res)
				}
			}
		})
	}
}
