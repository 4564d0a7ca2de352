#!/usr/bin/env python3
"""Seeds the fuzz corpora from real RedisBloom 2.8.2 output recorded in the
test vectors (SCANDUMP headers and chunks, DUMP payloads, crafted legacy
RDB payloads, LOADCHUNK header variants, Count-Min sketch, Top-K and t-digest payloads)."""
import hashlib
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VECTORS = os.path.join(ROOT, "crates/core/tests/data/vectors.json")
OUT = os.path.join(ROOT, "fuzz/corpus")


def put(target, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def walk(node, key=None):
    """Yields (key, value) for every hex string field in the vectors."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v, key)
    elif isinstance(node, str) and key and key.endswith("hex"):
        yield key, node


def main():
    with open(VECTORS) as f:
        vectors = json.load(f)
    headers, chunks, dumps = 0, 0, 0
    for key, text in walk(vectors):
        try:
            data = bytes.fromhex(text)
        except ValueError:
            continue
        if key in ("header_hex",) or (key == "data_hex" and len(data) >= 20
                                      and (len(data) - 20) % 53 == 0):
            put("header", data)
            headers += 1
        elif key == "data_hex":
            # chunk target records: iterator (LE i64), length byte, bytes
            for it in (1, len(data) + 1, 9, 145):
                put("chunk", b"\x07\x01\x00" + struct.pack("<q", it)
                    + bytes([min(len(data), 255)]) + data[:255])
            chunks += 1
        elif key in ("payload_hex", "dump_hex") and len(data) > 10:
            # the rdb target appends the trailer itself
            put("rdb", data[:-10])
            put("roundtrip", data[:-10])
            dumps += 1
    # Windowed filters are FerroBloom's own type: their seeds are the valid
    # payload bodies committed with the regression corpus.
    committed = os.path.join(ROOT, "crates/core/tests/data/fuzz/window_rdb")
    windows = 0
    for name in sorted(os.listdir(committed)):
        with open(os.path.join(committed, name), "rb") as f:
            body = f.read()
            put("window_rdb", body)
            put("window_roundtrip", body)
        windows += 1
    # Cuckoo filters: the committed seeds, made from cuckoo-vectors.json
    # (RedisBloom 2.8.2's headers, chunks and DUMP payloads).
    cuckoo = 0
    for target in ("cuckoo_header", "cuckoo_chunk", "cuckoo_rdb", "cuckoo_roundtrip"):
        committed = os.path.join(ROOT, "crates/core/tests/data/fuzz", target)
        for name in sorted(os.listdir(committed)):
            with open(os.path.join(committed, name), "rb") as f:
                body = f.read()
            put(target, body)
            if target == "cuckoo_rdb":
                # The round trip decodes the same payload bodies.
                put("cuckoo_roundtrip", body)
            cuckoo += 1
    # Count-Min sketches: the committed seeds (RedisBloom 2.8.2's DUMP
    # payload bodies from sketches-vectors.json, and encoding-1 bodies of
    # every cell size); both targets decode payload bodies.
    cms = committed_seeds(("cms_rdb", "cms_roundtrip"))
    # Top-K: the committed seeds (RedisBloom 2.8.2's DUMP example, the
    # crafted RESTORE payloads and the scenarios' values, as payload
    # bodies; the round trip also gets add sequences, its other input).
    topk = committed_seeds(("topk_rdb", "topk_roundtrip"))
    # t-digests: the committed seeds (RedisBloom 2.8.2's DUMP payload
    # bodies from sketches-vectors.json: every scenario and merge, and the
    # crafted payloads); both targets decode payload bodies.
    tdigest = committed_seeds(("tdigest_rdb", "tdigest_roundtrip"))
    print(f"fuzz corpus: {headers} headers, {chunks} chunks, {dumps} RDB values, "
          f"{windows} windowed values, {cuckoo} Cuckoo inputs, {cms} Count-Min inputs, "
          f"{topk} Top-K inputs, {tdigest} t-digest inputs in {OUT}", file=sys.stderr)


def committed_seeds(targets):
    """Adds the seeds committed under crates/core/tests/data/fuzz/<target>
    to each target's corpus; returns how many."""
    count = 0
    for target in targets:
        committed = os.path.join(ROOT, "crates/core/tests/data/fuzz", target)
        for name in sorted(os.listdir(committed)):
            with open(os.path.join(committed, name), "rb") as f:
                put(target, f.read())
            count += 1
    return count


if __name__ == "__main__":
    main()
