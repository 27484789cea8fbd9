"""A safetensors file's tensors as read-only numpy arrays over the file's memory map.

The format (https://huggingface.co/docs/safetensors) is an 8-byte little-endian header length, a JSON
header naming each tensor's dtype, shape and byte range, then the raw little-endian bytes. Mapping
them costs under a millisecond; ``safetensors.numpy.load_file`` copies the whole file (~12 ms for the
shipped model's 15 MB, every command), and a query reads a few of its 30k rows. The arrays are the
file's bytes, so every value is the one ``load_file`` gives (a test compares them).
"""

from __future__ import annotations

import json
import mmap
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

HEADER_LENGTH_BYTES = 8  # the format's u64 header length
# The format's dtypes numpy holds as they are; BF16 and the FP8 kinds have no numpy dtype (neither
# safetensors.numpy nor model2vec's numpy path reads them).
DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
          "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?"}


def map_tensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """Every tensor of a safetensors file, memory-mapped read-only.

    :param path: the ``.safetensors`` file.
    :return: tensor name -> array (read-only; it keeps the map open while referenced).
    :raises ValueError: the file is not a well-formed safetensors file, or holds a dtype numpy lacks.
    :raises OSError: the file cannot be read.
    """
    with path.open("rb") as handle:
        size = path.stat().st_size
        if size < HEADER_LENGTH_BYTES:
            raise ValueError(f"{path}: not a safetensors file (too short)")
        header_length = int.from_bytes(handle.read(HEADER_LENGTH_BYTES), "little")
        if header_length > size - HEADER_LENGTH_BYTES:
            raise ValueError(f"{path}: not a safetensors file (header longer than the file)")
        try:
            header = json.loads(handle.read(header_length))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"{path}: not a safetensors file (header: {err})") from None
        if not isinstance(header, dict):
            raise ValueError(f"{path}: not a safetensors file (the header is not a JSON object)")
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    data_start = HEADER_LENGTH_BYTES + header_length
    tensors: dict[str, npt.NDArray[Any]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = np.dtype(DTYPES[entry["dtype"]])
            shape = tuple(int(n) for n in entry["shape"])
            begin, end = (int(n) for n in entry["data_offsets"])
        except KeyError as err:
            raise ValueError(f"{path}: tensor {name!r}: no {err} or an unknown dtype") from None
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= size - data_start or end - begin != count * dtype.itemsize:
            raise ValueError(f"{path}: tensor {name!r}: byte range {begin}-{end} does not hold {shape} "
                             f"{entry['dtype']}")
        flat = np.frombuffer(mapped, dtype=dtype, count=count, offset=data_start + begin)
        tensors[name] = flat.reshape(shape)
    return tensors
