# MBPP+ hidden tests, second half (code.go): the test's own setup, expected results and assertion
# helper, applied to the values the candidate's process returned (mbpp_probe.py). No candidate
# code runs in this process: the values arrive as JSON and are rebuilt as plain Python and numpy
# values, so neither the candidate's objects nor its patches can take part in the comparison.


def __evosteer_load(payload):
    import base64
    import json

    global __evosteer_records
    records = []
    for line in base64.b64decode(payload).decode("utf-8").splitlines():
        record = json.loads(line)
        if not isinstance(record, dict) or record.get("k") != len(records):
            break  # out of order, repeated or forged: the values stop here
        records.append(record)
    __evosteer_records = records


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
    if tag == "a" and type(body) is list and len(body) == 3 and type(body[0]) is str:
        import numpy
        dtype = numpy.dtype(body[0])
        if dtype.kind in "biufcUS" and type(body[1]) is list:
            return numpy.array(__evosteer_decode(body[2]), dtype=dtype).reshape(body[1])
    return __EvosteerOpaque()
