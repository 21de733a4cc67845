# MBPP+ hidden tests, first half (code.go): run after the candidate program in the candidate's own
# process, with the test inputs and no expected result. Everything here is in reach of the
# candidate, so nothing here decides a verdict: it only calls the entry point on each input and
# writes the values it returns, as data, one JSON line each, to a file of the run that the grader
# reads back whole (what the program prints is not read). The judge, a separate process that
# never runs candidate code, compares them with the expected results.


def __evosteer_probe_all(probe, inputs, path):
    import json
    import os

    out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)

    def emit(record):
        data = (json.dumps(record) + "\n").encode("utf-8")
        while data:
            data = data[os.write(out, data):]

    for index, inp in enumerate(inputs):
        try:
            record = {"k": index, "v": __evosteer_encode(probe(inp, index), 0, set())}
        except BaseException as error:  # SystemExit and KeyboardInterrupt fail a test too
            emit({"k": index, "err": type(error).__name__})
            return
        emit(record)


def __evosteer_encode(value, depth, seen):
    """A value as tagged JSON (mbpp_judge.py decodes it): JSON's own types as themselves,
    containers, bytes, complex numbers and numpy values by tag, anything else opaque, so an object
    whose comparison methods lie arrives at the judge as a value that equals nothing."""
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if depth > 200 or id(value) in seen:
        return {"o": "nested too deep"}
    numpy = __import__("sys").modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic):  # a numpy scalar keeps its type
        item = value.item()
        if value.dtype.kind not in "biufcUS" or isinstance(item, numpy.generic):
            return {"o": "numpy " + value.dtype.str}
        return {"n": [value.dtype.str, __evosteer_encode(item, depth + 1, seen)]}
    if numpy is not None and isinstance(value, numpy.ndarray):
        if value.dtype.kind not in "biufcUS":
            return {"o": "ndarray of " + value.dtype.str}
        return {"a": [value.dtype.str, list(value.shape), __evosteer_encode(value.tolist(), depth + 1, seen)]}
    for base in (int, float, str):
        if isinstance(value, base):
            return base(value)
    seen = seen | {id(value)}
    for base, tag in ((list, "l"), (tuple, "t"), (set, "s"), (frozenset, "f")):
        if isinstance(value, base):
            return {tag: [__evosteer_encode(item, depth + 1, seen) for item in base.__iter__(value)]}
    if isinstance(value, dict):
        return {"d": [[__evosteer_encode(k, depth + 1, seen), __evosteer_encode(v, depth + 1, seen)]
                      for k, v in dict.items(value)]}
    if isinstance(value, (bytes, bytearray)):
        return {"b": __import__("base64").b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, complex):
        return {"c": [float(value.real), float(value.imag)]}
    return {"o": kind.__name__}
