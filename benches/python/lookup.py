"""Feature lookups from Python, one 64-float vector at a time, against the peers a Python origin
app would use instead, in one run (scripts/bench-python.sh runs it):

- edgewise_features: Reader.get, a memoryview into the mapped store (and numpy.frombuffer);
- redis-py GET from a real redis-server over a Unix socket, values of 256 bytes;
- the daemon's memcached-text Unix socket, one `get table:key` per lookup;
- the daemon's HTTP API, GET /v1/features/{table}/{key} on a kept-alive connection.

The daemon (EDGEWISED_BIN) publishes KEYS keys from a Parquet file written with pyarrow; redis
holds the same vectors. Prints a Markdown table of p50 / p99 / p99.9 and throughput.
"""

import http.client
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy
import pyarrow
import pyarrow.parquet
import redis

from edgewise_features import Reader

KEYS = int(os.environ.get("KEYS", 1_000_000))
DIM = 64
LOOKUPS = int(os.environ.get("LOOKUPS", 200_000))
SECRET = "bench-secret-0123456789abcdef"
TABLE = "features"


def percentiles(samples):
    samples.sort()
    pick = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))] / 1000
    return pick(0.5), pick(0.99), pick(0.999)


def timed(lookup, keys):
    """Latency of each lookup in ns (perf_counter_ns around the call), and lookups per second."""
    samples = []
    clock = time.perf_counter_ns
    started = clock()
    for key in keys:
        before = clock()
        lookup(key)
        samples.append(clock() - before)
    elapsed = (clock() - started) / 1e9
    return samples, len(keys) / elapsed


def start_daemon(work, values):
    store, ingest = work / "store", work / "ingest"
    config = work / "edgewised.toml"
    config.write_text(
        f'[features]\ndir = "{store}"\ningest_dir = "{ingest}"\nsocket = "{work}/features.sock"\n'
        "ingest_interval_ms = 50\nmax_ingest_bytes = 4294967296\n"
    )
    daemon = subprocess.Popen(
        [os.environ["EDGEWISED_BIN"], "--config", config, "--listen", "127.0.0.1:0", "--log-format", "text"],
        env={**os.environ, "EDGEWISED_API_SECRET": SECRET, "NO_COLOR": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    addr = None
    for line in daemon.stderr:
        if "listening" in line:
            addr = line.split("addr=")[1].split()[0]
            break
    # The rest of its log is not read: keep the pipe from filling.
    subprocess.Popen(["cat"], stdin=daemon.stderr, stdout=subprocess.DEVNULL)
    table = pyarrow.table(
        {
            "key": pyarrow.array(numpy.arange(KEYS, dtype=numpy.uint64)),
            "features": pyarrow.FixedSizeListArray.from_arrays(pyarrow.array(values.reshape(-1)), DIM),
        }
    )
    hidden = ingest / f".{TABLE}.parquet"
    ingest.mkdir(parents=True, exist_ok=True)
    pyarrow.parquet.write_table(table, hidden)
    hidden.rename(ingest / f"{TABLE}.parquet")
    deadline = time.monotonic() + 300
    while True:
        try:
            with Reader(str(store)) as reader:
                if reader.get(TABLE, KEYS - 1) is not None:
                    break
        except Exception:
            pass
        assert time.monotonic() < deadline, "the daemon did not publish"
        time.sleep(0.1)
    return daemon, store, addr


def start_redis(work, values):
    path = work / "redis.sock"
    server = subprocess.Popen(
        ["redis-server", "--port", "0", "--unixsocket", str(path), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    client = redis.Redis(unix_socket_path=str(path))
    deadline = time.monotonic() + 30
    while True:
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
    pipe = client.pipeline(transaction=False)
    for key in range(KEYS):
        pipe.set(f"{TABLE}:{key}", values[key].tobytes())
        if key % 10_000 == 9_999:
            pipe.execute()
    pipe.execute()
    return server, client


def memcached_text(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    reader = sock.makefile("rb")

    def lookup(key):
        sock.sendall(f"get {TABLE}:{key}\r\n".encode())
        header = reader.readline()
        if header.startswith(b"VALUE"):
            size = int(header.split()[3])
            value = reader.read(size + 2)[:-2]
            reader.readline()  # END
            return value
        return None

    return lookup


def http_api(addr):
    host, port = addr.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port))
    headers = {"Authorization": f"Bearer {SECRET}"}

    def lookup(key):
        connection.request("GET", f"/v1/features/{TABLE}/{key}", headers=headers)
        return connection.getresponse().read()

    return lookup


def main():
    rng = numpy.random.default_rng(7)
    values = rng.random((KEYS, DIM), dtype=numpy.float32)
    pick = random.Random(11)
    keys = [pick.randrange(KEYS) for _ in range(LOOKUPS)]
    with tempfile.TemporaryDirectory(prefix="edgewise-bench-python-") as work:
        work = Path(work)
        print(f"publishing {KEYS} keys x {DIM} floats, loading redis", file=sys.stderr)
        daemon, store, addr = start_daemon(work, values)
        server, client = start_redis(work, values)
        try:
            reader = Reader(str(store))
            expected = values[keys[0]].tolist()
            assert reader.get(TABLE, keys[0]).tolist() == expected
            assert numpy.frombuffer(client.get(f"{TABLE}:{keys[0]}"), numpy.float32).tolist() == expected
            peers = [
                ("edgewise_features Reader.get (memoryview)", lambda k: reader.get(TABLE, k), keys),
                (
                    "edgewise_features get + numpy.frombuffer",
                    lambda k: numpy.frombuffer(reader.get(TABLE, k), numpy.float32),
                    keys,
                ),
                ("redis-py GET, Unix socket", lambda k: client.get(f"{TABLE}:{k}"), keys[: LOOKUPS // 4]),
                (
                    "edgewised memcached-text socket",
                    memcached_text(str(work / "features.sock")),
                    keys[: LOOKUPS // 4],
                ),
                ("edgewised HTTP API, keep-alive", http_api(addr), keys[: LOOKUPS // 10]),
            ]
            rows = []
            for name, lookup, sample in peers:
                for key in sample[:1000]:  # warm up
                    lookup(key)
                latencies, rate = timed(lookup, sample)
                rows.append((name, *percentiles(latencies), rate, len(sample)))
            base = rows[0][1]
            redis_p50 = rows[2][1]
            print(f"\n### Python lookups, one {DIM}-float vector, {KEYS} keys, random keys\n")
            print("| client | p50 µs | p99 µs | p99.9 µs | lookups/s | p50 vs edgewise | lookups timed |")
            print("|---|---:|---:|---:|---:|---:|---:|")
            for name, p50, p99, p999, rate, count in rows:
                print(f"| {name} | {p50:.2f} | {p99:.2f} | {p999:.2f} | {rate:,.0f} | {p50 / base:.1f}× | {count:,} |")
            print(f"\nredis-py p50 ÷ edgewise_features p50: {redis_p50 / base:.0f}×")
            reader.close()
        finally:
            daemon.terminate()
            server.terminate()
            daemon.wait(timeout=30)
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
