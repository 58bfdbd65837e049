"""`mlconv-run OUTDIR --serve` under attack (issue 28): every case of the issue answers a 4xx
JSON error (or closes) within its timeout, the server's threads stay bounded, nothing is
printed on stderr but the ready lines, and valid requests keep their right numbers.

One server process for the module, started with `--read-timeout 1 --max-connections 8` so
that the slow cases resolve in about a second; raw sockets send what urllib would refuse to.
"""

from __future__ import annotations

import io
import json
import socket
import time
import urllib.request
from pathlib import Path

import forgery
import numpy as np
import pytest
from seed_models import convert_file
from serve_process import start_server

READ_TIMEOUT = 1.0
CONNECTIONS = 8


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serving")
    model = forgery.two_input_onnx(folder / "two.onnx")
    out, _ = convert_file(model, "disable_default_optimizations: true\n", quiet=True)
    arguments = ("--read-timeout", str(READ_TIMEOUT), "--max-connections", str(CONNECTIONS))
    process, line, log = start_server(out, folder / "stderr.txt", *arguments)
    url = line.rsplit(" ", 1)[-1]
    port = int(url.rsplit(":", 1)[-1])
    yield {"url": url, "port": port, "process": process, "log": Path(log.name), "model": model}
    process.terminate()
    status = process.wait(30)
    lines = Path(log.name).read_text().splitlines()
    log.close()
    # SIGTERM stops the server cleanly: exit status 0, nothing on stderr but the ready lines
    # (no traceback from closing the model)
    assert status == 0, lines
    assert [line for line in lines if not line.startswith("mlconv-run: ")] == [], lines


def raw(port: int, data: bytes, wait: float = 10.0) -> tuple[int | None, dict]:
    """Send `data`, read the answer until the server closes or the JSON body is complete;
    (status, JSON body) or (None, {}) when it closed without answering."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(data)
        answer = b""
        start = time.monotonic()
        while time.monotonic() - start < wait:
            try:
                chunk = sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            answer += chunk
            head, _, body = answer.partition(b"\r\n\r\n")
            length = [
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ]
            if length and len(body) >= length[0]:
                break
        else:
            raise AssertionError(f"no answer and no close within {wait} s")
    if not answer:
        return None, {}
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body) if body else {}


def post(port: int, body: bytes, kind: str = "application/json", length: str | None = None):
    length = str(len(body)) if length is None else length
    request = (
        f"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: {kind}\r\n"
        f"Content-Length: {length}\r\nConnection: close\r\n\r\n"
    ).encode()
    return raw(port, request + body)


def inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal(forgery.SHAPE).astype(np.float32),
        "k": rng.integers(-3, 4, (forgery.SHAPE[0], 4)).astype(np.int64),
    }


def reference(model: Path, arrays: dict[str, np.ndarray]) -> np.ndarray:
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(str(model)).run(None, arrays)[0]


def as_json(arrays: dict[str, np.ndarray]) -> bytes:
    return json.dumps({"inputs": {k: v.tolist() for k, v in arrays.items()}}).encode()


def test_valid_requests_keep_their_numbers(server):
    arrays, other = inputs(1), inputs(2)
    expected = reference(server["model"], arrays)
    assert not np.allclose(expected, reference(server["model"], other))
    status, body = post(server["port"], as_json(arrays))
    assert status == 200, body
    np.testing.assert_allclose(np.asarray(body["outputs"]["y"]), expected, rtol=1e-5, atol=1e-5)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    request = urllib.request.Request(
        server["url"] + "/v1/predict", buffer.getvalue(), {"Content-Type": "application/x-npz"}
    )
    with np.load(io.BytesIO(urllib.request.urlopen(request, timeout=30).read())) as answer:
        np.testing.assert_allclose(answer["y"], expected, rtol=1e-5, atol=1e-5)
    limits = json.loads(urllib.request.urlopen(server["url"] + "/v1/model", timeout=30).read())
    assert limits["limits"]["max_body_bytes"] >= 1 << 20


def _bigint_body() -> bytes:
    arrays = inputs(3)
    body = {k: v.tolist() for k, v in arrays.items()}
    body["k"][0][0] = 10**30
    return json.dumps({"inputs": body}).encode()


def _float_for_int_body() -> bytes:
    body = {k: v.tolist() for k, v in inputs(3).items()}
    body["k"][0][0] = 1.7
    return json.dumps({"inputs": body}).encode()


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _lying_npy_header() -> bytes:
    """An .npz whose x.npy header claims 10**12 float32 values over 64 bytes of data."""
    import zipfile

    from numpy.lib import format as npy

    header = io.BytesIO()
    npy.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (10**12,)})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("x.npy", header.getvalue() + bytes(64))
        archive.writestr("k.npy", _npy(np.zeros((2, 4), np.int64)))
    return buffer.getvalue()


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


CASES = {
    # name: (body, content type, Content-Length header or None, expected status, fragment)
    "Content-Length -1": (b"{}", "application/json", "-1", 400, "Content-Length"),
    "Content-Length abc": (b"{}", "application/json", "abc", 400, "Content-Length"),
    "200 MB Content-Length, short body": (b"{}", "application/json", str(200 << 20), 413, "limit"),
    "100k-deep JSON": (b"[" * 100000 + b"]" * 100000, "application/json", None, 400, "nested"),
    "not JSON": (b"{'inputs'", "application/json", None, 400, "not JSON"),
    "not UTF-8": (b'{"inputs": "\xff"}', "application/json", None, 400, "UTF-8"),
    "not an object": (b"[1, 2]", "application/json", None, 400, '{"inputs"'),
    "10**30 into int64": (_bigint_body(), "application/json", None, 422, "out of range"),
    "1.7 into int64": (_float_for_int_body(), "application/json", None, 422, "no truncation"),
    "ragged": (
        json.dumps({"inputs": {"x": [[1.0], [1.0, 2.0]], "k": [[0]]}}).encode(),
        "application/json", None, 422, "rectangular",
    ),
    "strings for floats": (
        json.dumps({"inputs": {"x": [["a"]], "k": [[0]]}}).encode(),
        "application/json", None, 422, "not numbers",
    ),
    "unknown input": (
        json.dumps({"inputs": {"x": [[0.0]], "k": [[0]], "evil": [1]}}).encode(),
        "application/json", None, 422, "unknown inputs: evil",
    ),
    # found by bench/fuzz.py: a name with a newline made a two-line error
    "a name with a newline": (
        json.dumps({"inputs": {"x\nevil": [0.0]}}).encode(),
        "application/json", None, 422, "unknown inputs: x\\nevil",
    ),
    "wrong shape": (as_json({**inputs(4), "x": np.zeros((3, 8), np.float32)}), "application/json", None, 422, "expected shape"),
    "truncated zip": (_npz(**inputs(5))[:-40], "application/x-npz", None, 400, "not an .npz"),
    "not a zip": (b"PK\x03\x04garbage", "application/x-npz", None, 400, "not an .npz"),
    "npy header lies": (_lying_npy_header(), "application/x-npz", None, 400, "header"),
    "pickled object array": (
        _npz(x=np.array([None, 1], dtype=object), k=np.zeros((2, 4), np.int64)),
        "application/x-npz", None, 422, "is not taken",
    ),
    "npz wrong dtype": (
        _npz(x=np.zeros(forgery.SHAPE, np.float64), k=np.zeros((2, 4), np.int64)),
        "application/x-npz", None, 422, "expected dtype float32",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_requests_are_4xx_json_errors(server, case):
    body, kind, length, status, fragment = CASES[case]
    start = time.monotonic()
    got, answer = post(server["port"], body, kind, length)
    assert got == status, (got, answer)
    assert fragment in answer["error"] and "\n" not in answer["error"], answer
    assert time.monotonic() - start < 3 * READ_TIMEOUT + 5


def test_npz_bomb_is_refused_before_it_unpacks(server):
    """The issue: a 1 MB .npz that unpacks to 1 GiB grew the server to 1.46 GB."""
    bomb = forgery.npz_bomb(1 << 30)
    assert len(bomb) < 2 << 20
    before = _rss(server["process"].pid)
    status, answer = post(server["port"], bomb, "application/x-npz")
    assert status == 413 and "unpacks to" in answer["error"], answer
    assert _rss(server["process"].pid) - before < 64 << 20


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def test_short_body_answers_within_the_read_timeout(server):
    """The issue: a Content-Length with a shorter body hung a thread forever."""
    start = time.monotonic()
    status, answer = post(server["port"], b'{"inputs": ', "application/json", "1000")
    assert time.monotonic() - start < 3 * READ_TIMEOUT + 2
    assert status in (400, None), answer
    if status == 400:
        assert "ended after 11 of its 1000 bytes" in answer["error"]


def test_slow_connections_are_bounded(server):
    """The issue: 300 slow connections each held a thread forever (323 threads). Now at most
    --max-connections are served, the others answered 503 at once, and each slow one is
    closed by the read timeout; then the server answers again."""
    pid = server["process"].pid
    base = _threads(pid)
    sockets = []
    try:
        for _ in range(60):
            sock = socket.create_connection(("127.0.0.1", server["port"]), timeout=10)
            sock.sendall(b"POST /v1/predict HTTP/1.1\r\nContent-")  # and never more
            sockets.append(sock)
        time.sleep(0.5)
        assert _threads(pid) <= base + CONNECTIONS + 2
        statuses = []
        for sock in sockets:
            data = b""
            try:
                while chunk := sock.recv(65536):
                    data += chunk
            except (ConnectionResetError, TimeoutError):
                pass
            statuses.append(int(data.split()[1]) if data else None)
        busy = statuses.count(503)
        assert busy >= len(sockets) - CONNECTIONS, statuses
        assert set(statuses) <= {503, 400, 408, None}, statuses
    finally:
        for sock in sockets:
            sock.close()
    status, body = post(server["port"], as_json(inputs(6)))
    assert status == 200, body


def test_nothing_on_stderr_but_the_ready_lines(server):
    lines = server["log"].read_text().splitlines()
    assert [line for line in lines if not line.startswith("mlconv-run: ")] == [], lines


def test_an_unexpected_error_is_one_line_of_at_most_200_characters():
    """A 500 for an error mlconv did not foresee: its type and the first 200 characters of its
    text, one JSON field (the answer's size bounded whatever the error holds)."""
    from mlconv.converter.serving import error_answer

    status, body = error_answer(ValueError("x" * 300))
    assert (status, body) == (500, {"error": "ValueError: " + "x" * 200})
    assert error_answer(KeyError("k")) == (500, {"error": "KeyError: 'k'"})


def test_nesting_is_counted_whatever_bytes_sit_between_the_brackets():
    """A body nested 100 deep with a 0xFF byte after each bracket is refused for its depth
    (the first check), not later for its bytes: every byte outside the brackets is ignored."""
    from mlconv.backends.http_request import RequestError, RequestLimits, parse_json

    limits = RequestLimits(max_body_bytes=1 << 20, max_array_bytes=1 << 20)
    with pytest.raises(RequestError, match="nested deeper than") as error:
        parse_json(b"[\xff" * 100, [], limits)
    assert error.value.status == 400


def test_server_limits_default_to_the_documented_bounds():
    """converter/serving.py's docstring and `mlconv-run --help`: reads wait 10 s, a whole
    request 30 s, 64 connections at once."""
    from mlconv.converter.serving import ServerLimits

    limits = ServerLimits()
    assert (limits.read_timeout, limits.request_timeout, limits.max_connections) == (10, 30, 64)
