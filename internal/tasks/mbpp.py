# MBPP+ code extraction (METHOD.md §6.2; the release's curve_benchmarks and curve_tools), run in
# the sandbox on an agent's output as data; nothing of the output is executed here. The Go grader
# writes the request to request.json beside this program and reads the reply from reply.json
# (files of the run, never cut as its output is: an output or hidden tests of many MiB fit).
import ast
import builtins
import json
import re
import symtable
import textwrap

ASSERTION_CALL = re.compile(r"assertion\(\s*([A-Za-z_]\w*)\(\*inp\)")
FENCE_LINE = re.compile(r"^\s*(`{3,})([^`]*)$")
INLINE_FENCE = re.compile(r"```(?:python|py)?\s*\n?(.*?)```", re.IGNORECASE | re.DOTALL)
CODE_START = re.compile(r"\b(?:async\s+def|def|class|import|from)\s+\w")
IMPORT_LINE = re.compile(r"\b(?:import|from)\s+\w")
PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3"})
BUILTIN_NAMES = frozenset(dir(builtins))
DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
IMPORT = (ast.Import, ast.ImportFrom)
# Calls that make a statement a driver (it runs, prints or exits rather than defines).
DRIVER_CALLS = frozenset({"print", "input", "open", "exit", "quit", "breakpoint", "help", "sys.exit",
                          "os._exit", "unittest.main", "doctest.testmod", "pytest.main"})
TEST_LINE = "Your code should pass this test:\n"
# The one loop of every MBPP+ plus_test: for i, (inp, exp) in enumerate(zip(inputs, results)):
# assertion(<probe of entry(*inp)>, exp, atol).
TEST_LOOP_TARGET, TEST_LOOP_ITER = "(i, (inp, exp))", "enumerate(zip(inputs, results))"


def parse(source):
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def lines_of(text):
    return re.split(r"\r\n|\r|\n", text)


def entry_point(plus_test, tests):
    """The function under test: the callee of assertion(f(*inp), ...) in the hidden tests, else
    the first non-builtin call of the first visible test."""
    called = ASSERTION_CALL.findall(plus_test or "")
    if called:
        return called[-1]
    tree = parse(tests[0]) if tests else None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in BUILTIN_NAMES:
            return node.func.id
    return None


class Block:
    def __init__(self, source, python, closed):
        self.source, self.python, self.closed = source, python, closed


def fenced_blocks(text):
    """Fenced blocks in order. A fence line at least as long as the open fence closes the block
    when it has no info string and opens a new one (leaving the old one unclosed) when it has."""
    blocks, current = [], None  # current: [tag, fence width, lines]

    def close(block, closed):
        source = textwrap.dedent("\n".join(block[2])).strip()
        if source:
            blocks.append(Block(source, block[0] in PYTHON_TAGS, closed))

    for line in lines_of(text):
        fence = FENCE_LINE.match(line)
        if fence is None or (current is not None and len(fence.group(1)) < current[1]):
            if current is not None:
                current[2].append(line)
            continue
        info = fence.group(2).strip()
        tag = info.split()[0].lower() if info else ""
        if current is not None:
            close(current, closed=not info)
            if not info:
                current = None
                continue
        current = [tag, len(fence.group(1)), []]
    if current is not None:
        close(current, closed=False)
    return blocks


def defines(tree, name):
    for node in tree.body:
        if isinstance(node, DEFINITION) and node.name == name:
            return True
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def extract_code(output, entry):
    """The program of an output: the last fenced block defining the entry point (closed python
    blocks first, then closed ones, then any); else the longest block with a function, else the
    longest block, else the longest inline fence, else the output itself or its code part."""
    blocks = fenced_blocks(output)
    parsed = [(block, parse(block.source)) for block in blocks]
    usable = [(block, tree) for block, tree in parsed if tree is not None]
    if entry:
        defining = [block for block, tree in usable if defines(tree, entry)]
        for rank in (lambda b: b.closed and b.python, lambda b: b.closed, lambda b: True):
            picked = [block for block in defining if rank(block)]
            if picked:
                return sanitize(picked[-1].source, entry)
    functions = [block for block, tree in usable
                 if any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) for node in tree.body)]
    if functions or blocks:
        source = max(functions or blocks, key=lambda block: len(block.source)).source
    else:
        inline = [match.group(1).strip() for match in INLINE_FENCE.finditer(output)]
        source = max(inline, key=len) if inline else output.strip()
        if not inline and parse(source) is None:
            source = unfenced_code(source, entry) or source
    return sanitize(source, entry)


def unfenced_code(text, entry):
    """The longest parsable run of lines from the first code-looking line (the definition of the
    entry point, with the imports just above it, when there is one)."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if CODE_START.search(line)]
    if entry:
        defining = [i for i in starts if re.search(r"\bdef\s+" + re.escape(entry) + r"\s*\(", lines[i])]
        if defining:
            first = defining[0]
            while first - 1 in starts and IMPORT_LINE.search(lines[first - 1]):
                first -= 1
            starts = [first]
    if not starts:
        return None
    head = lines[starts[0]]
    body = [head[CODE_START.search(head).start():]] + lines[starts[0] + 1:]
    for end in range(len(body), 0, -1):
        candidate = "\n".join(body[:end]).rstrip()
        if candidate and parse(candidate) is not None:
            return candidate
    return None


def dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id] + parts[::-1]) if isinstance(node, ast.Name) else None


def root_name(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def main_guard(node):
    return isinstance(node, ast.If) and ast.unparse(node.test).replace('"', "'") in (
        "__name__ == '__main__'", "'__main__' == __name__")


def drives(node, defined):
    for child in ast.walk(node):
        if isinstance(child, ast.Assert):
            return True
        if isinstance(child, ast.Call) and (dotted(child.func) in DRIVER_CALLS or dotted(child.func) in defined):
            return True
        if isinstance(child, ast.Attribute) and dotted(child) == "sys.stdin":
            return True
    return False


def binds(node):
    names = set()
    for child in ast.walk(node):
        storing = isinstance(getattr(child, "ctx", None), (ast.Store, ast.Del))
        if isinstance(child, ast.Name) and storing:
            names.add(child.id)
        elif isinstance(child, (ast.Attribute, ast.Subscript)) and storing:
            names.add(root_name(child) or "")
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
            names.add(root_name(child.func.value) or "")  # a method call may mutate its object
        elif isinstance(child, DEFINITION):
            names.add(child.name)
        elif isinstance(child, IMPORT):
            names.update((alias.asname or alias.name).split(".")[0] for alias in child.names)
    names.discard("")
    return names


def reads(node):
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load)}


def definition_reads(node):
    """Module-level names a definition uses, its nested scopes' globals included."""
    try:
        table = symtable.symtable(ast.unparse(node), "<candidate>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return reads(node)
    names = {symbol.get_name() for symbol in table.get_symbols() if symbol.is_referenced()}
    pending = list(table.get_children())
    while pending:
        scope = pending.pop()
        names.update(symbol.get_name() for symbol in scope.get_symbols()
                     if symbol.is_global() and (symbol.is_referenced() or symbol.is_declared_global()))
        pending.extend(scope.get_children())
    return names


def kept_statements(tree, entry):
    """Indices of the top-level statements to keep: imports, definitions and plain statements;
    not asserts or main guards; drivers only when they bind a name kept code reads."""
    defined = {node.name for node in tree.body if isinstance(node, DEFINITION)}
    imported, kept, drivers = set(), set(), []
    needed = {entry} if entry else set()
    for index, node in enumerate(tree.body):
        if isinstance(node, IMPORT):
            kept.add(index)
            imported |= binds(node)
        elif isinstance(node, DEFINITION):
            kept.add(index)
            needed |= definition_reads(node)
        elif isinstance(node, ast.Assert) or main_guard(node):
            continue
        elif drives(node, defined):
            drivers.append(index)
        else:
            kept.add(index)
            needed |= reads(node)
    while True:
        grown = [index for index in drivers if (binds(tree.body[index]) - imported) & needed]
        if not grown:
            return kept
        for index in grown:
            drivers.remove(index)
            kept.add(index)
            needed |= reads(tree.body[index])


def guard_imports(node):
    """The imports inside a main guard, which survive the guard's removal."""
    if not main_guard(node):
        return []
    return [ast.unparse(child) for child in node.body if isinstance(child, IMPORT)]


def splice(source, tree, kept):
    """The source without the dropped statements, line-exact where each dropped statement owns
    its lines, else regenerated with ast.unparse."""
    lines = lines_of(source)
    replacement = {}
    for index, node in enumerate(tree.body):
        if index in kept:
            continue
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        before = lines[first].encode("utf-8")[:node.col_offset].decode("utf-8", "replace").strip()
        after = lines[last].encode("utf-8")[node.end_col_offset:].decode("utf-8", "replace").strip()
        if before or (after and not after.startswith("#")):
            out = []
            for number, item in enumerate(tree.body):
                out.extend([ast.unparse(item)] if number in kept else guard_imports(item))
            return "\n".join(out)
        replacement[first] = guard_imports(node)
        for number in range(first + 1, last + 1):
            replacement[number] = []
    out = []
    for number, line in enumerate(lines):
        out.extend(replacement.get(number, [line]))
    return "\n".join(out).strip()


def sanitize(source, entry):
    """Drop top-level asserts, main guards and driver calls, keeping what the kept code needs."""
    tree = parse(source)
    if tree is None:
        return source
    try:
        kept = kept_statements(tree, entry)
        if len(kept) == len(tree.body):
            return source
        cleaned = splice(source, tree, kept)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source
    return cleaned if parse(cleaned) is not None else source


def prompt_entry(prompt):
    head, found, test = prompt.rpartition(TEST_LINE)
    if not found:
        return None
    entry = entry_point("", [test.strip()])
    if entry is None:
        tree = parse(test.strip())
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                return node.func.id
    return entry


def tested_program(prompt, output, programs):
    """A successful python tool program that defines the entry point, for an output that does
    not define it itself (curve_tools.tested_program)."""
    entry = prompt_entry(prompt)
    if entry is None:
        return None
    tree = parse(extract_code(output, entry))
    if tree is not None and defines(tree, entry):
        return None
    for program in reversed(programs):
        tree = parse(program)
        if tree is not None and defines(tree, entry):
            return sanitize(program, entry)
    return None


def assigns(node, name):
    return isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and any(
        isinstance(target, ast.Name) and target.id == name
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target]))


def split_tests(plus_test):
    """The hidden tests as two programs' parts (code.go): the setup (everything but the loop), in
    runs of statements each marked whether it assigns the expected results (the probe's setup
    leaves those out, the judge's keeps all), the expression that calls the entry point on inp,
    and the loop for the judge, with the dataset's assertion call replaced by the EvalPlus checks
    (mbpp_judge.py) on the value the probe recorded, the expected value, the task's tolerance and
    the input. A plus_test of another shape is refused, never run as it is."""
    tree = parse(plus_test)
    if tree is None:
        raise ValueError("plus_test does not parse")
    loops = [node for node in tree.body if isinstance(node, ast.For)]
    if len(loops) != 1:
        raise ValueError("plus_test has %d top-level for loops, want the one test loop" % len(loops))
    loop = loops[0]
    body = loop.body[0] if len(loop.body) == 1 else None
    call = body.value if isinstance(body, ast.Expr) else None
    if (ast.unparse(loop.target) != TEST_LOOP_TARGET or ast.unparse(loop.iter) != TEST_LOOP_ITER or loop.orelse
            or not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name)
            or call.func.id != "assertion" or len(call.args) != 3 or call.keywords):
        raise ValueError("plus_test's loop is not `for %s in %s: assertion(<call of the entry point>, exp, atol)`"
                         % (TEST_LOOP_TARGET, TEST_LOOP_ITER))
    probe = call.args[0]
    if reads(probe) & {"exp", "results"}:
        raise ValueError("plus_test's probe %r reads the expected result" % ast.unparse(probe)[:200])
    setup = []  # [source, assigns the results] runs in order
    for node in tree.body:
        if node is loop:
            continue
        expected = assigns(node, "results")
        if not expected and "results" in reads(node):
            raise ValueError("plus_test reads results outside the test loop")
        if setup and setup[-1][1] == expected:
            setup[-1][0].append(ast.unparse(node))
        else:
            setup.append([[ast.unparse(node)], expected])
    call.func = ast.Name(id="__evosteer_check", ctx=ast.Load())
    call.args = [ast.Call(func=ast.Name(id="__evosteer_output", ctx=ast.Load()),
                          args=[ast.Name(id="i", ctx=ast.Load())], keywords=[]),
                 call.args[1], call.args[2], ast.Name(id="inp", ctx=ast.Load())]
    return {"setup": [{"code": "\n".join(lines), "expected": expected} for lines, expected in setup],
            "probe": ast.unparse(probe), "loop": ast.unparse(loop)}


def main(request_path="request.json", reply_path="reply.json"):
    with open(request_path, encoding="utf-8") as request_file:
        request = json.load(request_file)
    if request["mode"] == "grade":
        entry = entry_point(request["plus_test"], request["tests"])
        source = extract_code(request["output"], entry)
        reply = {"entry": entry, "source": source, "parses": bool(source) and parse(source) is not None}
        try:
            reply["tests"] = split_tests(request["plus_test"])
        except (ValueError, RecursionError, MemoryError) as error:
            reply["tests_error"] = str(error)
    else:
        reply = {"program": tested_program(request["prompt"], request["output"], request["programs"])}
    with open(reply_path, "w", encoding="ascii") as reply_file:
        json.dump(reply, reply_file)
