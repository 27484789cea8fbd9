"""Mapped safetensors tensors equal what the safetensors library itself reads, byte for byte."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from knowcode.retrieval.embeddings import STATIC_MODEL_DIR
from knowcode.retrieval.tensor_file import DTYPES, map_tensors

BF16_HEADER = b'{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}'  # no numpy dtype


def test_the_shipped_model_maps_to_the_library_s_arrays() -> None:
    path = STATIC_MODEL_DIR / "model.safetensors"
    theirs, ours = load_file(str(path)), map_tensors(path)
    assert ours.keys() == theirs.keys()
    for name, array in theirs.items():
        assert ours[name].dtype == array.dtype
        assert ours[name].shape == array.shape
        assert ours[name].tobytes() == array.tobytes()
        assert not ours[name].flags.writeable  # the file's own bytes: never written through


def test_every_numpy_dtype_and_shape_round_trips(tmp_path: Path) -> None:
    generator = np.random.default_rng(3)
    tensors = {f"t_{code}": (generator.integers(0, 2, (3, 5)) if code == "BOOL"
                             else generator.integers(0, 100, (3, 5))).astype(np.dtype(dtype))
               for code, dtype in DTYPES.items()}
    tensors |= {"scalar": np.array(2.5, dtype=np.float32), "empty": np.zeros((0, 4), dtype=np.float16),
                "vector": np.arange(7, dtype=np.int64)}
    path = tmp_path / "t.safetensors"
    save_file(tensors, str(path), metadata={"format": "np"})
    ours, theirs = map_tensors(path), load_file(str(path))
    assert ours.keys() == theirs.keys() == tensors.keys()
    for name, array in theirs.items():
        assert ours[name].dtype == array.dtype, name
        np.testing.assert_array_equal(ours[name], array)


@pytest.mark.parametrize(("content", "message"), [
    (b"", "too short"),
    ((2**40).to_bytes(8, "little") + b"{}", "header longer"),
    ((3).to_bytes(8, "little") + b"{x}", "header"),
    ((2).to_bytes(8, "little") + b"[]", "not a JSON object"),
    (len(BF16_HEADER).to_bytes(8, "little") + BF16_HEADER, "unknown dtype"),
])
def test_malformed_files_are_refused(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content + b"\0" * 4)
    with pytest.raises(ValueError, match=message):
        map_tensors(path)


def test_a_byte_range_past_the_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    save_file({"a": np.arange(8, dtype=np.float32)}, str(path))
    path.write_bytes(path.read_bytes()[:-4])  # truncated: the last value is gone
    with pytest.raises(ValueError, match="byte range"):
        map_tensors(path)
