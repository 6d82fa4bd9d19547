"""The data mover's frames and handshake, written by hand from docs/mover.md
(struct, hmac, xxhsum, zstd; none of the project's code): a peer of its own for
the tests that play a hostile client, a hostile server, or an eavesdropper
who replays what it saw."""

import hashlib
import hmac
import json
import os
import struct
import subprocess

PROTOCOL_VERSION = 4  # server/src/mover/wire.h kVersion
MAGIC = 0x424D4353
HEADER = struct.Struct("<IHHQIIQQQ")  # magic version kind transfer file length offset checksum extra
HELLO, MANIFEST, HAVE, DATA, ZEROS, FILE_END, DONE, REPORT, BYE, ERROR, FILE_FAILED, CHALLENGE, PROOF = range(1, 14)
REQUIRES_KEY, REQUIRES_ENCRYPTION, OFFERS_AES = 1, 2, 4  # the Challenge's extra
HAS_KEY, ENCRYPT, AES = 1, 2, 4  # the Hello's extra
CLIENT_LABEL = b"slabcast mover 3 client hello\0"
SERVER_LABEL = b"slabcast mover 3 server proof\0"


def checksum_of(data):
    """XXH3-64, as the mover's frames carry it (xxhsum from Debian's xxhash)."""
    out = subprocess.run(["xxhsum", "-H3", "-"], input=data, capture_output=True, check=True)
    return int(out.stdout.split(b"=")[-1].strip(), 16)


MANIFEST_JSON, MANIFEST_ZSTD = 0, 1  # a Manifest frame's `file`: its encoding


def manifest_json(payload, encoding):
    """A manifest's JSON from the bytes of its frames (zstd from Debian's zstd)."""
    if encoding == MANIFEST_JSON:
        return payload
    assert encoding == MANIFEST_ZSTD, encoding
    return subprocess.run(["zstd", "-d", "-c"], input=payload, capture_output=True, check=True).stdout


def header(kind, transfer, length, file=0, offset=0, checksum=0, extra=0):
    return HEADER.pack(MAGIC, PROTOCOL_VERSION, kind, transfer, file, length, offset, checksum, extra)


def frame(kind, transfer, payload=b"", file=0, offset=0, extra=0):
    return header(kind, transfer, len(payload), file, offset, checksum_of(payload), extra) + payload


def read_exactly(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def read_frame(s, with_header=False):
    """(kind, payload), or (None, b"") when the peer closed; with_header:
    (kind, payload, the header's fields)."""
    head = read_exactly(s, HEADER.size)
    if head is None:
        return (None, b"", None) if with_header else (None, b"")
    fields = HEADER.unpack(head)
    payload = read_exactly(s, fields[5]) or b""
    return (fields[2], payload, fields) if with_header else (fields[2], payload)


def read_key(path):
    """The 32 bytes of a `slabcast keygen` file (64 hex characters)."""
    with open(path) as f:
        return bytes.fromhex(f.read().strip())


def hello_frame(server_nonce, challenge_flags, transfer, body, key=None, client_nonce=None):
    """The Hello: header, the client's nonce, its HMAC-SHA-256 over the label,
    the server's nonce, the Challenge's flags (u64), the header, the client's
    nonce and the JSON; then the JSON. Returns (bytes, client nonce, MAC)."""
    text = body if isinstance(body, bytes) else json.dumps(body).encode()
    client_nonce = client_nonce or os.urandom(32)
    head = header(HELLO, transfer, 64 + len(text), extra=HAS_KEY if key else 0)
    signed = CLIENT_LABEL + server_nonce + struct.pack("<Q", challenge_flags) + head + client_nonce + text
    mac = hmac.new(key, signed, hashlib.sha256).digest() if key else bytes(32)
    return head + client_nonce + mac + text, client_nonce, mac


def server_proof(key, server_nonce, client_nonce, client_mac):
    return hmac.new(key, SERVER_LABEL + server_nonce + client_nonce + client_mac, hashlib.sha256).digest()


def say_hello(s, transfer, body, key=None):
    """As a client: reads the server's Challenge, sends the Hello (never asking
    for encryption), and with a key reads and checks the server's Proof.
    Returns the Hello's bytes."""
    kind, nonce, fields = read_frame(s, with_header=True)
    assert kind == CHALLENGE and len(nonce) == 32, "no challenge: %r %r" % (kind, nonce)
    hello, client_nonce, mac = hello_frame(nonce, fields[8], transfer, body, key)
    s.sendall(hello)
    if key:
        kind, proof = read_frame(s)
        assert kind == PROOF, "no proof: %r %r" % (kind, proof)
        assert hmac.compare_digest(proof, server_proof(key, nonce, client_nonce, mac)), "a wrong proof"
    return hello


def challenge(requires_key=False):
    """What a server sends first, for tests that play the server."""
    return frame(CHALLENGE, 0, os.urandom(32), extra=REQUIRES_KEY if requires_key else 0)
