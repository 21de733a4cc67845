# Sandbox bootstrap, run as `python -I -B -u -X utf8 -c BOOT CONFIG`: apply the limits and
# confinement of CONFIG, report on fd 3, then run main.py of the working folder as __main__.
import sys


def _evosteer_confine(cfg):
    import resource

    if cfg["proc"]:  # a fresh /proc of the run's PID namespace (sandbox.go: mountProc)
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.mount(b"proc", b"/proc", b"proc", 2 | 4 | 8, None) != 0:  # nosuid, nodev, noexec
            raise OSError(ctypes.get_errno(), "mount /proc")
    for name, soft, hard in cfg["rlimits"]:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    if cfg["landlock"]:
        _evosteer_landlock(cfg["landlock"], cfg["read"])
    _evosteer_block_sockets()
    if cfg["seccomp"]:
        _evosteer_seccomp()


def _evosteer_landlock(abi, read_paths):
    import ctypes
    import os
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fs = (1 << 13) - 1  # every filesystem right of ABI 1
    if abi >= 2:
        fs |= 1 << 13  # REFER
    if abi >= 3:
        fs |= 1 << 14  # TRUNCATE
    if abi >= 5:
        fs |= 1 << 15  # IOCTL_DEV
    if abi >= 6:  # deny TCP bind and connect; keep abstract sockets and signals inside
        attr = struct.pack("=QQQ", fs, 3, 3)
    elif abi >= 4:
        attr = struct.pack("=QQ", fs, 3)
    else:
        attr = struct.pack("=Q", fs)
    ruleset = libc.syscall(444, attr, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    read = (1 << 0) | (1 << 2) | (1 << 3)  # EXECUTE, READ_FILE, READ_DIR
    file_rights = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    rules = [(p, read) for p in sorted(prefixes | set(read_paths))]
    rules.append((os.getcwd(), fs))
    rules.append(("/dev/null", (1 << 1) | (1 << 2) | (1 << 14)))
    for path, access in rules:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        if not os.path.isdir(path):
            access &= file_rights
        rule = struct.pack("=Qi", access & fs, fd)
        done = libc.syscall(445, ctypes.c_int(ruleset), ctypes.c_int(1), rule, ctypes.c_uint32(0))
        os.close(fd)
        if done < 0:
            raise OSError(ctypes.get_errno(), "landlock_add_rule " + path)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    if libc.syscall(446, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    os.close(ruleset)


def _evosteer_seccomp():
    # A kernel filter, below anything the program can reach (ctypes included): socket(2) of any
    # family and io_uring_setup (which can open sockets) fail with EACCES; socketpair(2), an
    # unconnected pair such as asyncio's self-pipe, stays. A system call of another architecture
    # (int 0x80 on x86_64) or of the x32 ABI fails with EPERM.
    import ctypes
    import struct

    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    allow, errno = 0x7FFF0000, 0x00050000
    arches = {0xC000003E: (41, 425), 0xC00000B7: (198, 425)}  # x86_64, aarch64: socket, io_uring_setup
    prog = [(ld, 0, 0, 4)]  # the architecture
    bodies = []
    for arch, denied in arches.items():
        body = [(ld, 0, 0, 0)]  # the system call number
        if arch == 0xC000003E:
            body.append(("x32",))
        body += [("deny", nr) for nr in denied] + [(ret, 0, 0, allow)]
        bodies.append((arch, body))
    # Layout: the arch tests, then each arch's body, then "everything else" and "socket" denials.
    tests = len(arches)
    offsets, at = [], 1 + tests
    for _, body in bodies:
        offsets.append(at)
        at += len(body)
    other, refuse = at, at + 1
    for i, (arch, _) in enumerate(bodies):
        pc = 1 + i
        nxt = pc + 1 if i + 1 < tests else other
        prog.append((jeq, offsets[i] - pc - 1, nxt - pc - 1, arch))
    for i, (_, body) in enumerate(bodies):
        for j, ins in enumerate(body):
            pc = offsets[i] + j
            if ins[0] == "x32":
                prog.append((jset, refuse - pc - 1, 0, 0x40000000))
            elif ins[0] == "deny":
                prog.append((jeq, refuse - pc - 1, 0, ins[1]))
            else:
                prog.append(ins)
    prog += [(ret, 0, 0, errno | 1), (ret, 0, 0, errno | 13)]  # EPERM, EACCES
    code = b"".join(struct.pack("=HBBI", *ins) for ins in prog)
    buf = ctypes.create_string_buffer(code, len(code))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(len(prog), ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")


def _evosteer_block_sockets():
    # The Python-level guard, for hosts without seccomp (ctypes gets past it). Only socket.socket
    # is replaced: socket.py's own methods call _socket.socket, which must stay the real class.
    import socket

    def refuse(*args, **kwargs):
        raise PermissionError("network access is disabled in this sandbox")

    class GuardedSocket(socket.socket):
        def __init__(self, family=-1, type=-1, proto=-1, fileno=None):
            if fileno is None:  # a new socket; one from socketpair() or accept() comes with its fd
                refuse()
            super().__init__(family, type, proto, fileno)

    socket.socket = GuardedSocket
    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "create_connection", "create_server"):
        setattr(socket, name, refuse)


def _evosteer_main():
    import json
    import os

    try:
        _evosteer_confine(json.loads(sys.argv[1]))
    except BaseException as error:
        os.write(3, ("error: %s" % (error,)).encode("utf-8", "replace"))
        os._exit(97)
    os.write(3, b"ready")
    os.close(3)
    with open("main.py", encoding="utf-8") as handle:
        source = handle.read()
    sys.argv = ["main.py"]
    scope = sys.modules["__main__"].__dict__
    for name in ("_evosteer_confine", "_evosteer_landlock", "_evosteer_seccomp", "_evosteer_block_sockets", "_evosteer_main"):
        scope.pop(name, None)
    try:
        exec(compile(source, "main.py", "exec"), scope)
    except SystemExit:
        raise
    except BaseException as error:
        import traceback

        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        sys.exit(1)


_evosteer_main()
