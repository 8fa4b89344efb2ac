"""Writes a CTranslate2 model directory from an attn Transformer translator: run by
`attn export --to ctranslate2` (tools/attn/cmd_export.cpp), which embeds this file, as

    python ctranslate2_export.py WORK OUT

WORK holds what the CLI wrote: weights.safetensors (the model's parameters under attn's
names, float32, plus "positions.table" (max_len, D), the positions attn adds, sinusoidal or
learned) and export.json ({"config": attn's TransformerConfig, "layer_norm_epsilon",
"vocabulary": the SentencePiece pieces by id, "special": {"pad", "bos", "eos", "unk"}}).
OUT, an existing empty directory, receives model.bin, config.json and
shared_vocabulary.json through ctranslate2's own TransformerSpec (validate, optimize, save:
what its converters do). Exit 3 when ctranslate2 cannot be imported, 1 on any other
failure, each with one line on stderr.

How attn's Transformer maps onto CTranslate2's (include/attn/nn/transformer.h):
- embeddings x √D (scale_embeddings), plus the positions table, for encoder and decoder;
- pre-LN (norm_first) or post-LN (pre_norm=False): CTranslate2 normalises the input of each
  block, or the sum after the residual, and pre-LN stacks end in a final layer norm;
- self-attention: in_proj (3D, D) is CTranslate2's fused QKV linear; cross-attention: its
  query rows (D, D) and its key/value rows (2D, D) are the two input linears;
- FFN linear1 / linear2 with relu or exact (erf) gelu (CTranslate2's GELU; GELUTanh is the
  tanh form); layer norm epsilon 1e-5 (CTranslate2's default is 1e-6);
- the output projection is the generator, or the target embedding when tied (no bias);
- tokens: the source is its pieces alone (no BOS/EOS added); decoding starts from BOS and
  stops at EOS.
"""
import json
import os
import struct
import sys


def read_float32_safetensors(path):
    """{name: float32 numpy array} of a safetensors file of F32 tensors (what the CLI wrote)."""
    import numpy as np

    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            raise ValueError(f"{path}: tensor '{name}' is {entry['dtype']}, expected F32")
        begin, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype="<f4").reshape(entry["shape"]).copy()
    return tensors


def set_linear(spec, weights, prefix, rows=None, separator="."):
    """spec.weight / .bias from PREFIX.weight / PREFIX.bias (PREFIX_weight with separator
    "_": torch's in_proj_weight), a row slice of both when given."""
    rows = rows if rows is not None else slice(None)
    spec.weight = weights[prefix + separator + "weight"][rows]
    if prefix + separator + "bias" in weights:
        spec.bias = weights[prefix + separator + "bias"][rows]


def set_layer_norm(spec, weights, prefix):
    spec.gamma = weights[prefix + ".weight"]
    spec.beta = weights[prefix + ".bias"]


def set_attention(spec, weights, prefix, d_model, self_attention):
    in_proj = prefix + ".in_proj"
    if self_attention:  # linear[0]: the fused (3D, D) query/key/value projection
        set_linear(spec.linear[0], weights, in_proj, separator="_")
    else:  # linear[0]: the query projection; linear[1]: keys and values of the memory
        set_linear(spec.linear[0], weights, in_proj, slice(0, d_model), separator="_")
        set_linear(spec.linear[1], weights, in_proj, slice(d_model, None), separator="_")
    set_linear(spec.linear[-1], weights, prefix + ".out_proj")


def set_ffn(spec, weights, prefix, norm):
    set_linear(spec.linear_0, weights, prefix + ".linear1")
    set_linear(spec.linear_1, weights, prefix + ".linear2")
    set_layer_norm(spec.layer_norm, weights, prefix + "." + norm)


def build_spec(weights, export):
    from ctranslate2.specs import common_spec, transformer_spec

    config = export["config"]
    d_model = int(config["d_model"])
    activations = {"relu": common_spec.Activation.RELU, "gelu": common_spec.Activation.GELU}
    if config["activation"] not in activations:
        raise ValueError(f"activation '{config['activation']}' has no CTranslate2 equivalent here")
    spec = transformer_spec.TransformerSpec.from_config(
        (int(config["encoder_layers"]), int(config["decoder_layers"])),
        int(config["heads"]),
        pre_norm=bool(config["norm_first"]),
        activation=activations[config["activation"]],
    )
    shared = bool(config["share_embeddings"])
    source_embedding = "embedding.weight" if shared else "src_embedding.weight"
    target_embedding = "embedding.weight" if shared else "tgt_embedding.weight"
    positions = weights["positions.table"]

    def set_stack(stack, name):
        """What the encoder and decoder stacks share: the scaled embeddings' positions, the final
        norm (pre-norm), each layer's self-attention; returns each layer with its weights' prefix."""
        stack.scale_embeddings = True
        stack.position_encodings.encodings = positions
        if config["norm_first"]:
            set_layer_norm(stack.layer_norm, weights, name + ".norm")
        layers = []
        for i, layer in enumerate(stack.layer):
            prefix = f"{name}.layers.{i}"
            set_attention(layer.self_attention, weights, prefix + ".self_attn", d_model, True)
            set_layer_norm(layer.self_attention.layer_norm, weights, prefix + ".norm1")
            layers.append((layer, prefix))
        return layers

    spec.encoder.embeddings[0].weight = weights[source_embedding]
    for layer, prefix in set_stack(spec.encoder, "encoder"):
        set_ffn(layer.ffn, weights, prefix, "norm2")

    decoder = spec.decoder
    decoder.embeddings.weight = weights[target_embedding]
    for layer, prefix in set_stack(decoder, "decoder"):
        set_attention(layer.attention, weights, prefix + ".multihead_attn", d_model, False)
        set_layer_norm(layer.attention.layer_norm, weights, prefix + ".norm2")
        set_ffn(layer.ffn, weights, prefix, "norm3")
    if "generator.weight" in weights:
        set_linear(decoder.projection, weights, "generator")
    else:  # tie_output: logits = h · E_target^T, no bias
        decoder.projection.weight = weights[target_embedding]

    special = export["special"]
    spec.config.unk_token = special["unk"]
    spec.config.bos_token = special["bos"]
    spec.config.eos_token = special["eos"]
    spec.config.decoder_start_token = special["bos"]
    spec.config.add_source_bos = False
    spec.config.add_source_eos = False
    spec.config.layer_norm_epsilon = float(f"{export['layer_norm_epsilon']:.7g}")  # 1e-05, not its float32 digits
    spec.register_source_vocabulary(export["vocabulary"])
    spec.register_target_vocabulary(export["vocabulary"])
    return spec


def main(work, out):
    # ctranslate2.specs imports torch when it can (seconds), for bfloat16 conversions alone;
    # these weights are numpy float32 arrays, so it is kept out.
    sys.modules.setdefault("torch", None)
    try:
        import ctranslate2
    except ImportError as e:
        print(f"{sys.executable} cannot import ctranslate2 ({e})", file=sys.stderr)
        return 3
    try:
        with open(os.path.join(work, "export.json"), encoding="utf-8") as f:
            export = json.load(f)
        weights = read_float32_safetensors(os.path.join(work, "weights.safetensors"))
        spec = build_spec(weights, export)
        spec.validate()
        spec.optimize(quantization=None)  # float32 weights; compute_type picks int8 etc. at load
        spec.save(out)
    except Exception as e:  # one line for the CLI, whatever failed
        print(f"ctranslate2 {ctranslate2.__version__}: {type(e).__name__}: {e}".replace("\n", " "), file=sys.stderr)
        return 1
    print(ctranslate2.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
