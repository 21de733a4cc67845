# MBPP+ hidden tests, second half (code.go): the test's own setup and expected results, with the
# checks of EvalPlus's evaluator (below), applied to the values the candidate's process returned
# (mbpp_probe.py). No candidate code runs in this process: the values arrive as JSON and are
# rebuilt as plain Python and numpy values, so neither the candidate's objects nor its patches can
# take part in the comparison.


def __evosteer_load(path, oracle):
    import json

    global __evosteer_records, __evosteer_oracle
    records = []
    with open(path, "rb") as values:
        for line in values.read().decode("utf-8", "replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                break
            if not isinstance(record, dict) or record.get("k") != len(records):
                break  # out of order, repeated or forged: the values stop here
            records.append(record)
    __evosteer_records, __evosteer_oracle = records, oracle


# The tolerance of the float comparison: the task's own (the third argument of the dataset's
# assertion call) until a test expects floats, then 1e-6 for that test and every later one.
__evosteer_atol = None


def __evosteer_check(out, exp, atol, inp):
    """One test as EvalPlus's evaluator judges it (evalplus/eval/__init__.py, unsafe_execute, at
    v0.3.1-44-g26d6d00; docs/METHOD.md section 6.2), in this order: equality, or the task's own
    oracle where EvalPlus has one (code.go picks it by the MBPP task id); where that fails and a
    tolerance applies, the value must be of the expected value's very type, of its length where
    that is a list or a tuple, and numpy.allclose to it within the tolerance; otherwise equality
    decides. A raised error fails the test, as there."""
    global __evosteer_atol
    if __evosteer_atol is None:
        __evosteer_atol = atol
    passed = out == exp
    oracle = __evosteer_oracle
    if oracle == "set":  # the order of the items does not count
        passed = set(out) == set(exp)
    elif oracle == "not_none":  # the expected value says whether a match was found
        passed = out == exp if isinstance(out, bool) else exp == (out is not None)
    elif oracle == "any":  # every returned value passes
        passed = passed or True
    elif oracle == "or_zero":
        passed = passed or out == 0
    elif oracle == "pyramid_area":
        passed = passed or abs(out - __evosteer_pyramid_area(*inp)) <= __evosteer_atol
    elif oracle == "digit_distance":
        passed = passed or out == __evosteer_digit_distance(*inp)
    if __evosteer_atol == 0 and __evosteer_expects_floats(exp):
        __evosteer_atol = 1e-6
    if passed or __evosteer_atol == 0:
        assert passed, "test failed"
        return
    import numpy

    assert type(out) == type(exp), "the value is not of the expected type"
    if isinstance(exp, (list, tuple)):
        assert len(out) == len(exp), "the value's length is not the expected one"
    assert numpy.allclose(out, exp, rtol=1e-07, atol=__evosteer_atol), "the value is not within the tolerance"


def __evosteer_expects_floats(exp):
    """EvalPlus's test for a float result: a float, a nonempty list or tuple of floats only, or a
    numpy array of 32- or 64-bit floats."""
    if isinstance(exp, float):
        return True
    if isinstance(exp, (list, tuple)):
        return len(exp) > 0 and all(isinstance(item, float) for item in exp)
    numpy = __import__("sys").modules.get("numpy")
    return numpy is not None and isinstance(exp, numpy.ndarray) and exp.dtype in (numpy.float64, numpy.float32)


def __evosteer_pyramid_area(base, height):
    """EvalPlus's reading of Mbpp/581: a square pyramid of the given base edge and perpendicular
    height; the base and the four triangular faces, rounded to a whole number (the same float
    operations as there, so that a value on the rounding edge rounds the same way)."""
    import math

    slant = math.sqrt((base / 2) ** 2 + height ** 2)
    return round(base ** 2 + 4 * (base * slant) / 2)


def __evosteer_digit_distance(first, second):
    """EvalPlus's reading of Mbpp/558: the shorter number padded with leading zeros, the sum of
    the differences of the digits in each place."""
    a, b = str(first), str(second)
    width = max(len(a), len(b))
    return sum(abs(int(x) - int(y)) for x, y in zip(a.rjust(width, "0"), b.rjust(width, "0")))


class __EvosteerOpaque:
    """A value the candidate returned that is not plain data: it equals nothing."""

    def __eq__(self, other):
        return False

    def __ne__(self, other):
        return True

    __hash__ = object.__hash__


def __evosteer_output(index):
    if index >= len(__evosteer_records):
        raise AssertionError("the candidate returned no value for test %d" % index)
    record = __evosteer_records[index]
    if "err" in record or "v" not in record:
        raise AssertionError("the candidate raised %s on test %d" % (record.get("err"), index))
    return __evosteer_decode(record["v"])


def __evosteer_decode(value):
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) is not dict or len(value) != 1:
        return __EvosteerOpaque()
    (tag, body), = value.items()
    if tag in ("l", "t", "s", "f") and type(body) is list:
        items = [__evosteer_decode(item) for item in body]
        return {"l": list, "t": tuple, "s": set, "f": frozenset}[tag](items)
    if tag == "d" and type(body) is list and all(type(pair) is list and len(pair) == 2 for pair in body):
        return {__evosteer_decode(k): __evosteer_decode(v) for k, v in body}
    if tag == "b" and type(body) is str:
        return __import__("base64").b64decode(body)
    if tag == "c" and type(body) is list and len(body) == 2 and all(type(x) in (int, float) for x in body):
        return complex(body[0], body[1])
    if tag == "n" and type(body) is list and len(body) == 2 and type(body[0]) is str:
        import numpy
        dtype = numpy.dtype(body[0])
        if dtype.kind in "biufcUS":
            return numpy.array(__evosteer_decode(body[1]), dtype=dtype)[()]
    if tag == "a" and type(body) is list and len(body) == 3 and type(body[0]) is str:
        import numpy
        dtype = numpy.dtype(body[0])
        if dtype.kind in "biufcUS" and type(body[1]) is list:
            return numpy.array(__evosteer_decode(body[2]), dtype=dtype).reshape(body[1])
    return __EvosteerOpaque()
