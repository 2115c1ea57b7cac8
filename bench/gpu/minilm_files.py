#!/usr/bin/env python3
"""The MiniLM model folder as it travels to the GPU machine (standard library only).

The weights (~88 MB of f32) are more than one device call may carry, so
pack_beam.sh sends them xz-compressed in two parts. Before compressing,
model.safetensors is rewritten as four byte planes (every 4-byte word's
byte 0, then byte 1, ...: the sign and exponent bytes of the floats then
sit together and compress well), which takes xz from 82 to 75 MB.

    minilm_files.py planes SAFETENSORS OUT     the byte planes (pack_beam.sh)
    minilm_files.py unpack DEST SHA256 PART... joins the parts, untars into
        DEST, rebuilds model.safetensors from its planes and checks it
        against the sha256 pack_beam.sh recorded (run.sh, pack_beam.sh's check)
"""
import hashlib
import io
import lzma
import sys
import tarfile
from pathlib import Path

PLANES = ".planes"


def to_planes(data):
    """Four planes of a byte string (zero-padded to whole words), then its length."""
    n = len(data)
    data += b"\0" * (-n % 4)
    return b"".join(data[i::4] for i in range(4)) + n.to_bytes(8, "little")


def from_planes(blob):
    n = int.from_bytes(blob[-8:], "little")
    planes = blob[:-8]
    words = len(planes) // 4
    out = bytearray(len(planes))
    for i in range(4):
        out[i::4] = planes[i * words:(i + 1) * words]
    return bytes(out[:n])


class Parts(io.RawIOBase):
    """The parts read one after the other as one file."""

    def __init__(self, paths):
        self.files = [open(p, "rb") for p in paths]

    def readable(self):
        return True

    def readinto(self, buf):
        while self.files:
            n = self.files[0].readinto(buf)
            if n:
                return n
            self.files.pop(0).close()
        return 0


def unpack(dest, sha_file, parts):
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    parts = sorted(parts)
    try:
        with tarfile.open(fileobj=io.BufferedReader(Parts(parts), 1 << 20), mode="r|xz") as tar:
            for member in tar:
                if member.name.startswith("/") or ".." in Path(member.name).parts:
                    raise SystemExit(f"unpack: unsafe path {member.name}")
                if hasattr(tarfile, "data_filter"):
                    tar.extract(member, dest, filter="data")
                else:
                    tar.extract(member, dest)
    except (tarfile.TarError, EOFError, lzma.LZMAError) as e:
        raise SystemExit(f"unpack: {' + '.join(parts)} do not make the whole pack ({e}): carry every part")
    for planes in dest.rglob("*" + PLANES):
        target = planes.with_name(planes.name[: -len(PLANES)])
        data = from_planes(planes.read_bytes())
        want = Path(sha_file).read_text().split()[0]
        got = hashlib.sha256(data).hexdigest()
        if got != want:
            raise SystemExit(f"unpack: {target.name} has sha256 {got}, packed {want}: carry every part of one pack")
        target.write_bytes(data)
        planes.unlink()
        print(f"unpacked {target} ({len(data)} bytes, sha256 checked)")


def main(argv):
    if len(argv) == 3 and argv[0] == "planes":
        data = Path(argv[1]).read_bytes()
        Path(argv[2]).write_bytes(to_planes(data))
        print(hashlib.sha256(data).hexdigest())
    elif len(argv) >= 4 and argv[0] == "unpack":
        unpack(argv[1], argv[2], argv[3:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
