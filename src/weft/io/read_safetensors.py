#!/usr/bin/env python3
"""An independent safetensors reader (Python 3 + NumPy), used to check that Weft's files read
elsewhere: SafetensorsTest.PythonNumpyReadsTheFile runs it on a file Weft wrote.

Usage: read_safetensors.py FILE

Prints one line per tensor, in data order:
    name dtype shape sum crc32c_hex
where shape is "[d0,d1,...]", sum is repr() of the elements' float64 sum, and crc32c_hex is the
CRC32C of the tensor's bytes (from the crc32c module, not from the file's metadata), as 8
lower-case hex digits. BF16 tensors are widened to float32 first (NumPy has no bfloat16). Exits
non-zero with a message on any problem.
"""
import json
import struct
import sys

try:
    import numpy
except ImportError:
    sys.exit("read_safetensors.py needs NumPy: install python3-numpy (see tools/setup.sh)")
try:
    import crc32c
except ImportError:
    sys.exit("read_safetensors.py needs the crc32c module: install python3-crc32c "
             "(see tools/setup.sh)")

NUMPY_DTYPES = {
    "F32": "<f4",
    "F64": "<f8",
    "I32": "<i4",
    "I64": "<i8",
    "U8": "u1",
    "BOOL": "?",
}


def to_array(dtype, raw, shape):
    """The tensor's elements as a NumPy array; BF16 widened to float32."""
    if dtype == "BF16":
        # NumPy has no bfloat16. A bfloat16 is the upper half of a float32, so widening is exact:
        # shift the 16 bits into the top of a 32-bit word and read that as float32.
        words = numpy.frombuffer(raw, dtype="<u2").astype("<u4") << numpy.uint32(16)
        return words.view("<f4").reshape(shape)
    return numpy.frombuffer(raw, dtype=NUMPY_DTYPES[dtype]).reshape(shape)


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: read_safetensors.py FILE")
    path = argv[1]
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        sys.exit(f"{path}: shorter than the 8-byte header length")
    (header_bytes,) = struct.unpack("<Q", data[:8])
    if 8 + header_bytes > len(data):
        sys.exit(f"{path}: header length {header_bytes} runs past the end of the file")
    header = json.loads(data[8:8 + header_bytes].decode("utf-8"))
    header.pop("__metadata__", None)
    data_start = 8 + header_bytes
    # sorted() is stable and json keeps key order, so empty tensors stay in header order.
    entries = sorted(header.items(), key=lambda item: item[1]["data_offsets"][0])
    for name, entry in entries:
        begin, end = entry["data_offsets"]
        raw = data[data_start + begin:data_start + end]
        if len(raw) != end - begin:
            sys.exit(f"{path}: tensor {name} is truncated")
        array = to_array(entry["dtype"], raw, entry["shape"])
        total = float(numpy.sum(array, dtype=numpy.float64))
        shape = "[" + ",".join(str(d) for d in array.shape) + "]"
        print(f"{name} {entry['dtype']} {shape} {total!r} {crc32c.crc32c(raw):08x}")


if __name__ == "__main__":
    main(sys.argv)
