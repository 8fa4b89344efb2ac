"""safetensors interop: files written by attn.save_safetensors read back by an independent
reader written here (8-byte little-endian header length, JSON header, dtypes, offsets,
np.frombuffer), and files written by this test's own writer loaded by attn."""
import json
import os
import struct
import zlib

import numpy as np
import pytest

import attn
from parity import randn, to_attn

DTYPE_NAMES = {np.dtype(np.float32): "float32", np.dtype(np.int32): "int32"}
DTYPES = {"F32": np.float32, "I32": np.int32, "F64": np.float64, "I64": np.int64}


def read_safetensors(path):
    """An independent reader: returns ({name: array}, metadata, header_length)."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    buffer = data[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = np.dtype(DTYPES[entry["dtype"]]).newbyteorder("<")
        arr = np.frombuffer(buffer[begin:end], dtype=dtype).reshape(entry["shape"])
        tensors[name] = arr
    return tensors, metadata, n, list(header.keys())


def write_safetensors(path, tensors, metadata=None, pad=True):
    """An independent writer: tensors is a list of (name, array)."""
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, arr in tensors:
        arr = np.array(arr, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
        raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        code = {np.dtype(np.float32): "F32", np.dtype(np.int32): "I32", np.dtype(np.float64): "F64"}[arr.dtype]
        header[name] = {"dtype": code, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode("utf-8")
    if pad:
        text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


TENSORS = [("encoder.weight", randn(1, 4, 5)), ("encoder.bias", randn(2, 5)), ("scalar", np.array(3.5, np.float32)),
           ("ids", np.arange(-3, 9, dtype=np.int32).reshape(3, 4)), ("empty", np.zeros((0, 3), np.float32)),
           ("big", randn(3, 17, 33, scale=1e3))]


def test_attn_writes_independent_reader_reads(tmp_path):
    path = str(tmp_path / "a.safetensors")
    meta = {"attn": json.dumps({"hidden": 16, "vocab": ["<pad>", "é"]}), "note": "ünïcode ok"}
    attn.save_safetensors(path, [(n, attn.tensor(a)) for n, a in TENSORS], meta)
    tensors, metadata, n, order = read_safetensors(path)
    assert (8 + n) % 8 == 0, "header padded so the data buffer is 8-byte aligned"
    assert order == [n for n, _ in TENSORS], "tensors in the order given"
    # Issue 18 item 8: a CRC-32 of each tensor's little-endian bytes, which zlib reproduces.
    sums = json.loads(metadata.pop("attn.crc32"))
    assert metadata == meta
    for name, arr in TENSORS:
        assert sums[name] == f"{zlib.crc32(arr.astype(arr.dtype.newbyteorder('<')).tobytes()):08x}", name
        got = tensors[name]
        assert got.dtype == arr.dtype and got.shape == arr.shape, f"{name}: {got.dtype}{got.shape} vs {arr.dtype}{arr.shape}"
        assert np.array_equal(got, arr), f"{name}: values differ"
    # Offsets are back to back and cover the whole buffer.
    size = os.path.getsize(path)
    assert size == 8 + n + sum(a.nbytes for _, a in TENSORS)
    assert os.listdir(tmp_path) == ["a.safetensors"], "no temporary file left behind"


@pytest.mark.parametrize("pad", [True, False])
def test_independent_writer_attn_reads(tmp_path, pad):
    path = str(tmp_path / "b.safetensors")
    order = list(reversed(TENSORS))
    write_safetensors(path, order, {"attn": "{}", "k": "v"}, pad=pad)
    f = attn.load_safetensors(path)
    assert [n for n, _ in f.tensors] == [n for n, _ in order]
    assert f.metadata == {"attn": "{}", "k": "v"}
    assert not f.verified, "a file without checksums loads, marked unverified"
    for name, arr in TENSORS:
        t = f.at(name)
        assert t.dtype == DTYPE_NAMES[arr.dtype], f"{name}: dtype {t.dtype}"
        assert t.shape == arr.shape
        assert np.array_equal(t.numpy(), arr), f"{name}: values differ"


def test_unsupported_dtype_and_damage_are_io_errors(tmp_path):
    path = str(tmp_path / "c.safetensors")
    write_safetensors(path, [("x", np.ones(3, np.float64))])
    with pytest.raises(attn.IoError, match="F64"):
        attn.load_safetensors(path)
    write_safetensors(path, [("x", np.ones(3, np.float32))])
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-4])  # truncated data
    with pytest.raises(attn.IoError, match="c.safetensors"):
        attn.load_safetensors(path)
    open(path, "wb").write(b"\xff" * 8)  # absurd header length
    with pytest.raises(attn.IoError):
        attn.load_safetensors(path)


def test_seq2seq_parameters_round_trip(tmp_path):
    """A model's named_parameters saved by attn, read independently (PyTorch state_dict
    names and shapes), and loaded into a fresh model with load_into give the same loss."""
    cfg = json.dumps({"hidden": 8, "emb": 4, "attention": "bahdanau", "seed": 3})
    m1 = attn.models.Seq2Seq(cfg)
    m2 = attn.models.Seq2Seq(json.dumps({"hidden": 8, "emb": 4, "attention": "bahdanau", "seed": 4}))
    path = str(tmp_path / "model.safetensors")
    attn.save_safetensors(path, m1.named_parameters(), {"attn": m1.config_json()})
    tensors, metadata, _, order = read_safetensors(path)
    assert order == [n for n, _ in m1.named_parameters()]
    assert "encoder.embedding.weight" in tensors and "decoder.out.weight" in tensors
    assert json.loads(metadata["attn"])["hidden"] == 8
    for name, p in m1.named_parameters():
        assert np.array_equal(tensors[name], p.numpy()), name
    batch = attn.data.make_batch("reverse", [[3, 4, 5, 6], [7, 8]])
    with attn.no_grad():
        l1, l2 = m1.loss(batch).item(), m2.loss(batch).item()
    assert l1 != l2
    attn.load_into(attn.load_safetensors(path), m2.named_parameters())
    with attn.no_grad():
        assert m2.loss(batch).item() == l1


def test_load_into_mismatch_changes_nothing(tmp_path):
    path = str(tmp_path / "d.safetensors")
    attn.save_safetensors(path, {"w": attn.tensor(np.ones((2, 3), np.float32))})
    dst = attn.tensor(np.zeros((3, 2), np.float32))
    with pytest.raises(attn.IoError, match="w"):
        attn.load_into(attn.load_safetensors(path), [("w", dst)])
    assert np.all(dst.numpy() == 0)
