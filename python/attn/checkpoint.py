"""attn.load / attn.save: checkpoints as `attn train` writes them.

    model = attn.load("runs/copy/model.safetensors")   # an attn.Model
    model.translate([3, 4, 5])            # attn-seq2seq: token ids -> output ids
    model.translate("ein Hund läuft")     # attn-translation: text -> text (beam=, max_len=)
    model.classify("a fine film")         # attn-classifier: {label, name, probability, probabilities}
    model.generate("Le ", max_chars=40)   # attn-lm: text
    model.attend(...)                     # the attention weights of one input
    model.module                          # the attn.nn.Module (attn.models.Seq2Seq for seq2seq)
    attn.save(model, "copy.safetensors")  # same format and metadata, current parameters
    attn.save(seq2seq, "m.safetensors", task="copy", min_len=5, max_len=20)   # a model built in Python

A method the checkpoint's format has no use for is a ValueError naming the format.
"""
from . import _attn


def load(path):
    """The checkpoint at `path` with its model, vocabulary and tokenizer (attn.Model).
    IoError for a missing, damaged or foreign file."""
    return _attn.Model(str(path))


def save(model, path, *, task="copy", min_len=5, max_len=80, step=0):
    """Writes `model` as a checkpoint `attn.load`, `attn eval` and `attn translate` read.

    model: an attn.Model (from attn.load; keeps its format and metadata), or an
    attn.models.Seq2Seq built in Python (an attn-seq2seq checkpoint for `task`, trained on
    lengths min_len..max_len). The write is atomic."""
    if isinstance(model, _attn.Model):
        return model.save(str(path))
    if isinstance(model, _attn.models.Seq2Seq):
        return _attn._save_seq2seq(model, str(path), task, min_len, max_len, step)
    raise TypeError(f"attn.save: 'model' must be an attn.Model or attn.models.Seq2Seq, got {type(model).__name__}")
