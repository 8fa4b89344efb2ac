"""attn's safetensors files against the reference implementation, safetensors 0.8.0
(pinned in scripts/test-venv-requirements.txt):
- safe_open reads every kind of file attn writes (checkpoints of the seq2seq, translation,
  classifier and character-LM trainers, Python-saved models, `attn export --to torch`
  weights, attn.safetensors.save dicts), tensor for tensor and with the same metadata;
- attn reads what safetensors.numpy.save_file writes in the dtypes attn accepts (F32, I32:
  any shape, empty and 0-d included, any tensor order) and refuses every other dtype it
  writes (numpy's ten, and BF16 through safetensors.torch) with one clear message; a checkpoint rewritten by safetensors still loads and translates."""
import subprocess

import numpy as np
import pytest

import attn
from peers import ATTN_BIN, require_data, require_peer

safetensors = require_peer("safetensors", "0.8.0")
from safetensors import safe_open  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402

# numpy dtypes safetensors.numpy writes that attn does not read, with their safetensors names.
REFUSED = {np.float64: "F64", np.float16: "F16", np.int64: "I64", np.int16: "I16", np.int8: "I8",
           np.uint8: "U8", np.uint16: "U16", np.uint32: "U32", np.uint64: "U64", np.bool_: "BOOL"}


def check_reference_reads(path):
    """safe_open's tensors and metadata equal attn's own reading of `path`."""
    ours = attn.safetensors.load(path)
    with safe_open(str(path), framework="np") as f:
        theirs = {name: f.get_tensor(name) for name in f.keys()}
        metadata = f.metadata() or {}
    assert sorted(theirs) == sorted(ours), path
    for name, value in ours.items():
        assert theirs[name].dtype == value.dtype and theirs[name].shape == value.shape, (path, name)
        assert theirs[name].tobytes() == value.tobytes(), (path, name)
    metadata.pop("attn.crc32", None)  # attn verifies it and leaves it out of load_metadata
    assert metadata == attn.safetensors.load_metadata(path), path
    return len(ours)


def train(tmp_path, name, data, *args):
    out = tmp_path / name
    subprocess.run([ATTN_BIN, "train", *args, "--threads", "2", *(["--data", data] if data else []), "--out", str(out)],
                   check=True, capture_output=True)
    return out


def test_reference_reads_every_file_attn_writes(tmp_path, multi30k_transformer):
    files = []
    # attn's trainers: every safetensors file in their run folders.
    runs = [train(tmp_path, "copy", None, "--task", "copy", "--hidden", "8", "--emb", "4", "--min-len", "3",
                  "--max-len", "4", "--batch", "4", "--steps", "2"),
            multi30k_transformer.parent]
    runs.append(train(tmp_path, "cls", require_data("sst2"), "--task", "sst2", "--steps", "2", "--train-limit", "60",
                      "--dev-limit", "10"))
    runs.append(train(tmp_path, "lm", require_data("tatoeba-fra-eng"), "--task", "charlm", "--train-limit", "100",
                      "--d-model", "8", "--heads", "2", "--ffn", "16", "--dec-layers", "1", "--batch", "8",
                      "--steps", "2", "--eval-every", "2", "--eval-sentences", "10"))
    for run in runs:
        found = sorted(run.glob("*.safetensors"))
        assert found, f"no safetensors file in {run}"
        files += found
    # The Python API's save, the torch export's weights, a plain dict.
    model_path = tmp_path / "py.safetensors"
    attn.save(attn.models.Seq2Seq('{"attention": "luong", "hidden": 8, "emb": 4}'), model_path)
    files.append(model_path)
    subprocess.run([ATTN_BIN, "export", "--to", "torch", "--model", str(multi30k_transformer), "--out",
                    str(tmp_path / "torch")], check=True, capture_output=True)
    files.append(tmp_path / "torch" / "model.safetensors")
    plain = tmp_path / "plain.safetensors"
    attn.safetensors.save({"w": np.arange(12, dtype=np.float32).reshape(3, 4), "ids": np.array([-1, 2 ** 31 - 1]),
                           "scalar": np.float32(2.5) * np.ones((), np.float32), "empty": np.zeros((0, 3), np.float32)},
                          plain, metadata={"note": "ünïcode"})
    files.append(plain)
    counts = {str(path): check_reference_reads(path) for path in files}
    print(f"\nsafe_open read {len(counts)} files attn wrote, {sum(counts.values())} tensors, as attn does")
    assert all(counts.values()), counts


def test_attn_reads_what_save_file_writes(tmp_path):
    rng = np.random.default_rng(3)
    tensors = {"z.weight": rng.standard_normal((5, 3)).astype(np.float32),
               "a.ids": rng.integers(-2 ** 31, 2 ** 31 - 1, (2, 3, 4)).astype(np.int32),
               "m.scalar": np.array(7.25, np.float32), "m.empty": np.zeros((0, 4), np.int32),
               "b.special": np.array([np.inf, -np.inf, -0.0, 1e-45], np.float32)}
    path = tmp_path / "theirs.safetensors"
    save_file(tensors, str(path), metadata={"format": "np", "k": "v"})
    back = attn.safetensors.load(path)
    assert sorted(back) == sorted(tensors)
    for name, value in tensors.items():
        assert back[name].dtype == value.dtype and back[name].shape == value.shape, name
        assert back[name].tobytes() == value.tobytes(), name
    assert attn.safetensors.load_metadata(path) == {"format": "np", "k": "v"}


@pytest.mark.parametrize("dtype", list(REFUSED), ids=list(REFUSED.values()))
def test_attn_refuses_other_dtypes(tmp_path, dtype):
    path = tmp_path / "other.safetensors"
    save_file({"ok": np.ones(2, np.float32), "x": np.ones((2, 2), dtype)}, str(path))
    with pytest.raises(OSError) as e:
        attn.safetensors.load(path)
    assert str(e.value) == f"{path}: tensor 'x' has dtype '{REFUSED[dtype]}'; attn reads F32 and I32 only"


def test_attn_refuses_bf16(tmp_path):
    """BF16 (numpy has no such dtype: safetensors.torch writes it, with Debian's torch)."""
    import torch
    from safetensors.torch import save_file as save_torch_file
    path = tmp_path / "bf16.safetensors"
    save_torch_file({"x": torch.ones(2, 2, dtype=torch.bfloat16)}, str(path))
    with pytest.raises(OSError) as e:
        attn.safetensors.load(path)
    assert str(e.value) == f"{path}: tensor 'x' has dtype 'BF16'; attn reads F32 and I32 only"


def test_checkpoint_rewritten_by_safetensors_loads(tmp_path):
    """A checkpoint read and written again by safetensors (its own tensor order and header
    layout, attn's metadata and checksums kept) loads in attn and computes the same."""
    ours = tmp_path / "ours.safetensors"
    attn.save(attn.models.Seq2Seq('{"attention": "bahdanau", "hidden": 12, "emb": 6}'), ours)
    with safe_open(str(ours), framework="np") as f:
        metadata = f.metadata()
    theirs = tmp_path / "theirs.safetensors"
    save_file(load_file(str(ours)), str(theirs), metadata=metadata)
    assert theirs.read_bytes() != ours.read_bytes()  # a different layout, the same content
    source = [5, 9, 3, 12, 7]
    assert attn.load(theirs).translate(source, max_len=8) == attn.load(ours).translate(source, max_len=8)
