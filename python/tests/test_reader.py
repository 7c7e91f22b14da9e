"""edgewise_features against a real edgewised: the daemon is started per test, snapshots are
dropped into its ingest directory, and Python reads what it published."""

import ctypes
import os
import subprocess
import time
from pathlib import Path

import numpy
import pytest

from edgewise_features import FeatureStoreError, Reader

ROOT = Path(__file__).resolve().parents[2]


def daemon_bin():
    path = Path(os.environ.get("EDGEWISED_BIN", ROOT / "target/debug/edgewised"))
    assert path.exists(), f"{path} is missing: cargo build -p edgewise-daemon"
    return path


class Daemon:
    def __init__(self, tmp_path):
        self.store = tmp_path / "store"
        self.ingest = tmp_path / "ingest"
        config = tmp_path / "edgewised.toml"
        config.write_text(
            f'[features]\ndir = "{self.store}"\ningest_dir = "{self.ingest}"\n'
            "ingest_interval_ms = 20\n"
        )
        self.process = subprocess.Popen(
            [daemon_bin(), "--config", config, "--listen", "127.0.0.1:0"],
            env={**os.environ, "EDGEWISED_API_SECRET": "test-secret-0123456789abcdef"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.wait_for(lambda version: version >= 1)

    def version(self):
        try:
            with Reader(str(self.store)) as reader:
                return reader.version
        except FeatureStoreError:
            return 0

    def wait_for(self, done, within=20.0):
        deadline = time.monotonic() + within
        while not done(self.version()):
            assert time.monotonic() < deadline, "the daemon did not publish in time"
            time.sleep(0.02)

    def drop(self, name, text):
        """Writes a snapshot file hidden, renames it in, and waits for its version."""
        before = self.version()
        hidden = self.ingest / f".{name}"
        hidden.write_text(text)
        hidden.rename(self.ingest / name)
        self.wait_for(lambda version: version > before)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=20)


@pytest.fixture
def daemon(tmp_path):
    daemon = Daemon(tmp_path)
    yield daemon
    daemon.stop()


def test_get_returns_float32_views_in_place(daemon):
    daemon.drop("users.csv", "7,0.5,-1.25,3\n8,1,2,3\n")
    with Reader(str(daemon.store)) as reader:
        assert reader.version == daemon.version()
        view = reader.get("users", 7)
        assert isinstance(view, memoryview)
        assert (view.format, view.itemsize, view.shape, view.readonly) == ("f", 4, (3,), True)
        assert view.tolist() == [0.5, -1.25, 3.0]
        array = numpy.frombuffer(view, dtype=numpy.float32)
        assert array.tolist() == [0.5, -1.25, 3.0]
        assert not array.flags.writeable
        with pytest.raises(TypeError):
            view[0] = 1.0
        assert reader.get("users", 9) is None
        assert reader.get("nope", 7) is None
        assert reader.get("", 7) is None


def test_views_stay_readable_across_publishes_and_close(daemon):
    daemon.drop("users.csv", "1,1\n")
    reader = Reader(str(daemon.store))
    first = reader.get("users", 1)
    held = numpy.frombuffer(first, dtype=numpy.float32)
    # Unchanged until the reader's next call: publishes wait for it, then write new files.
    daemon.drop("users.csv", "1,2\n")
    assert held.tolist() == [1.0]
    reader.release()
    for value in range(3, 7):
        daemon.drop("users.csv", f"1,{value}\n")
    assert reader.get("users", 1).tolist() == [6.0]
    reader.close()
    # Released and closed, the old view is still mapped: reading it is safe, if stale.
    assert len(held.tolist()) == 1
    with pytest.raises(ValueError, match="closed"):
        reader.get("users", 1)
    with pytest.raises(ValueError, match="closed"):
        _ = reader.version
    reader.close()


def test_errors_are_python_exceptions(daemon, tmp_path):
    with pytest.raises(FeatureStoreError, match="No such file"):
        Reader(str(tmp_path / "nowhere"))
    assert issubclass(FeatureStoreError, Exception)
    with Reader(str(daemon.store)) as reader:
        with pytest.raises(OverflowError):
            reader.get("users", -1)
        with pytest.raises(TypeError):
            reader.get(3, 1)


class PyBuffer(ctypes.Structure):
    """CPython's Py_buffer, as C consumers of the buffer protocol see it."""

    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
        ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
        ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)),
        ("internal", ctypes.c_void_p),
    ]


def test_the_buffer_protocol_as_c_consumers_use_it(daemon):
    get_buffer = ctypes.pythonapi.PyObject_GetBuffer
    get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(PyBuffer), ctypes.c_int]
    release = ctypes.pythonapi.PyBuffer_Release
    release.argtypes = [ctypes.POINTER(PyBuffer)]
    full_ro, writable = 0x11C, 0x1
    daemon.drop("users.csv", "7,0.5,-1.25,3\n")
    with Reader(str(daemon.store)) as reader:
        exporter = reader.get("users", 7).obj
        # A refused request leaves `obj` NULL, so a consumer may always release.
        refused = PyBuffer()
        ctypes.memset(ctypes.byref(refused), 0xFF, ctypes.sizeof(refused))
        with pytest.raises(BufferError, match="read-only"):
            get_buffer(exporter, ctypes.byref(refused), writable)
        assert refused.obj is None
        # Consumers may copy the struct (PyMemoryView_FromBuffer does): nothing in it may
        # point into the original.
        original = PyBuffer()
        assert get_buffer(exporter, ctypes.byref(original), full_ro) == 0
        copy = PyBuffer.from_buffer_copy(original)
        original.itemsize, original.shape, original.strides = 0, None, None
        assert (copy.len, copy.ndim, copy.format) == (12, 1, b"f")
        assert (copy.shape[0], copy.strides[0]) == (3, 4)
        floats = (ctypes.c_float * 3).from_address(copy.buf)
        assert list(floats) == [0.5, -1.25, 3.0]
        release(ctypes.byref(copy))
