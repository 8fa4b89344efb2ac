"""Beam translation with attn's trained Transformer weights in the peers (bench/peers/compare.sh).

    python translate_peer.py convert --torch-export DIR --out CT2DIR
        a CTranslate2 model from `attn export --to torch`'s folder, through ctranslate2's
        spec API (the bench's own converter, until `attn export --to ctranslate2` exists).
        Tokens are piece ids written as decimal strings ("412"), with CTranslate2's names
        for the specials: PAD 0 "<blank>", BOS 1 "<s>", EOS 2 "</s>", UNK 3 "<unk>".
    python translate_peer.py run --engine attn --attn build/attn --model RUN/model.safetensors \
        --src-text test.de --out hyp.txt
        times `attn translate` as a child process (its start and model load are measured
        on an empty input first and subtracted); peak RSS from the child's rusage.
    python translate_peer.py bleu --hyp hyp.txt --ref test.en [--ids hyp.ids] [--first N]
        sacreBLEU's corpus BLEU (13a, cased) and the number of target pieces, one JSON line.
    python translate_peer.py run --engine torch|ctranslate2 [--compute-type int8] --model DIR \
        --src ids.txt --out hyp-ids.txt [--beam 5 --length-penalty 1 --batch 64 --threads 2]
        translates source piece ids (`attn tokenize encode --ids`), writes the output ids one
        sentence a line, prints one JSON line: sentences/s, target tokens/s (EOS not counted),
        the process's peak RSS.

Both engines decode as `attn translate` does: non-empty sources sorted by length, batches of
--batch, max length 2 x the batch's longest source + 10 (at most the positions - 1), beam 5,
length penalty alpha. attn and the torch peer normalise by GNMT's ((5 + len) / 6)^alpha;
CTranslate2 by len^alpha (its only form), so its hypotheses may differ where lengths compete;
`--beam-rules ctranslate2` runs attn with CTranslate2's (attn translate --beam-rules).
Only the translation is timed: not the imports, the model load or reading the ids.
"""
import argparse
import json
import os
import sys
import time

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = {PAD: "<blank>", BOS: "<s>", EOS: "</s>", UNK: "<unk>"}


def peak_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def read_config(export_dir):
    """KIND and CONFIG of the model.py `attn export --to torch` wrote (imports it: needs torch)."""
    import importlib.util
    path = os.path.join(export_dir, "model.py")
    if not os.path.isfile(path):
        sys.exit(f"translate_peer: {path} does not exist (not an attn export --to torch folder)")
    spec = importlib.util.spec_from_file_location("attn_exported_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.KIND, module.CONFIG


def check_supported(kind, c):
    """What both peers here implement: attn's recipe Transformer (pre-LN, ReLU, sinusoidal
    positions, one shared embedding tied to the output, as many encoder as decoder layers)."""
    wanted = {"kind": (kind, "transformer"), "norm_first": (c.get("norm_first"), True),
              "activation": (c.get("activation"), "relu"), "positions": (c.get("positions"), "sinusoidal"),
              "share_embeddings": (c.get("share_embeddings"), True), "tie_output": (c.get("tie_output"), True)}
    bad = [f"{k}={v!r} (needs {w!r})" for k, (v, w) in wanted.items() if v != w]
    if c.get("encoder_layers") != c.get("decoder_layers"):
        bad.append("encoder_layers != decoder_layers")
    if bad:
        sys.exit("translate_peer: unsupported model: " + ", ".join(bad))


def sinusoid_table(max_len, D):
    """attn's positions (torch_model.Positions): PE(p, 2i) = sin(p / 10000^(2i/D)), PE(p, 2i+1) = cos."""
    import numpy as np
    p = np.arange(max_len, dtype=np.float64)[:, None]
    j = np.arange(D)
    angle = p / np.power(10000.0, (j - j % 2) / D)
    return np.where(j % 2 == 0, np.sin(angle), np.cos(angle)).astype(np.float32)


def convert(a):
    import numpy as np
    from ctranslate2.specs import transformer_spec, common_spec
    from safetensors.numpy import load_file
    kind, c = read_config(a.torch_export)
    check_supported(kind, c)
    w = load_file(os.path.join(a.torch_export, "model.safetensors"))
    D, L = c["d_model"], c["encoder_layers"]
    spec = transformer_spec.TransformerSpec.from_config(L, c["heads"], pre_norm=True,
                                                        activation=common_spec.Activation.RELU)
    spec.config.layer_norm_epsilon = 1e-5  # torch's and attn's LayerNorm
    table = sinusoid_table(c["max_len"], D)

    def linear(s, name, rows=None):
        weight, bias = w[name + "weight"], w[name + "bias"]
        s.weight, s.bias = (weight, bias) if rows is None else (weight[rows], bias[rows])

    def norm(s, name):
        s.gamma, s.beta = w[name + ".weight"], w[name + ".bias"]

    for side in ("encoder", "decoder"):
        stack = getattr(spec, side)
        for e in stack.embeddings if isinstance(stack.embeddings, list) else [stack.embeddings]:
            e.weight = w["embedding.weight"]  # shared, scaled by sqrt(D) (CTranslate2's default)
        stack.position_encodings.encodings = table
        norm(stack.layer_norm, side + ".norm")
        for i, layer in enumerate(stack.layer):
            p = f"{side}.layers.{i}."
            linear(layer.self_attention.linear[0], p + "self_attn.in_proj_")  # fused q, k, v
            linear(layer.self_attention.linear[1], p + "self_attn.out_proj.")
            norm(layer.self_attention.layer_norm, p + "norm1")
            ffn_norm = p + "norm2"
            if side == "decoder":
                linear(layer.attention.linear[0], p + "multihead_attn.in_proj_", slice(0, D))  # query
                linear(layer.attention.linear[1], p + "multihead_attn.in_proj_", slice(D, 3 * D))  # keys, values
                linear(layer.attention.linear[2], p + "multihead_attn.out_proj.")
                norm(layer.attention.layer_norm, p + "norm2")
                ffn_norm = p + "norm3"
            norm(layer.ffn.layer_norm, ffn_norm)
            linear(layer.ffn.linear_0, p + "linear1.")
            linear(layer.ffn.linear_1, p + "linear2.")
    spec.decoder.projection.weight = w["embedding.weight"]  # tied, no bias
    spec.decoder.projection.bias = np.zeros(w["embedding.weight"].shape[0], dtype=np.float32)
    vocab = [SPECIALS.get(i, str(i)) for i in range(c["tgt_vocab"])]
    spec.register_source_vocabulary(vocab)
    spec.register_target_vocabulary(vocab)
    spec.validate()
    spec.optimize(quantization=None)
    os.makedirs(a.out, exist_ok=True)
    spec.save(a.out)
    print(f"translate_peer: wrote {a.out} (CTranslate2 TransformerSpec, {L}+{L} layers, d_model {D})")


def read_ids(path):
    with open(path) as f:
        return [[int(x) for x in line.split()] for line in f]


def sorted_batches(sources, batch):
    """Indices of the non-empty sources, by length, in batches of `batch`."""
    order = sorted((i for i, s in enumerate(sources) if s), key=lambda i: len(sources[i]))
    return [order[i:i + batch] for i in range(0, len(order), batch)]


def run_attn(a):
    import subprocess

    # attn's default rules need no option (a binary from before --beam-rules runs too)
    rules = [] if a.beam_rules == "attn" else ["--beam-rules", a.beam_rules]

    def child(text_path):
        with open(text_path) as stdin, open(a.out, "w") as stdout:
            t0 = time.perf_counter()
            proc = subprocess.Popen([a.attn, "translate", "--model", a.model, "--beam", str(a.beam),
                                     "--length-penalty", str(a.length_penalty), "--batch", str(a.batch),
                                     "--threads", str(a.threads), "--precision", a.precision, *rules], stdin=stdin,
                                    stdout=stdout)
            _, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"translate_peer: attn translate exited with {os.waitstatus_to_exitcode(status)}")
        return seconds, usage.ru_maxrss / 1024.0

    load_seconds, _ = child(os.devnull)
    seconds, peak = child(a.src_text)
    seconds -= load_seconds
    with open(a.src_text) as f:
        sentences = sum(1 for _ in f)
    with open(a.out) as f:
        hyps = f.read().splitlines()
    print(json.dumps({"bench": "translate", "impl": "attn", "engine": "attn translate " + a.precision,
                      "sentences": sentences,
                      "seconds": seconds, "sentences_per_s": sentences / seconds, "target_tokens": None,
                      "hypothesis_words": sum(len(h.split()) for h in hyps), "peak_rss_mb": peak,
                      "load_seconds": load_seconds, "beam": a.beam, "length_penalty": a.length_penalty,
                      "beam_rules": a.beam_rules, "batch": a.batch, "threads": a.threads}))


def bleu(a):
    import sacrebleu
    with open(a.hyp) as h, open(a.ref) as r:
        hyps, refs = h.read().splitlines(), r.read().splitlines()[:a.first or None]
    if len(hyps) != len(refs):
        sys.exit(f"translate_peer: {len(hyps)} hypotheses for {len(refs)} references")
    metric = sacrebleu.BLEU(tokenize="13a")
    b = metric.corpus_score(hyps, [refs])
    tokens = sum(len(ids) for ids in read_ids(a.ids)) if a.ids else None
    print(json.dumps({"bleu": b.score, "target_tokens": tokens, "signature": str(metric.get_signature()),
                      "sacrebleu": sacrebleu.__version__}))


def run(a):
    if a.engine == "attn":
        return run_attn(a)
    sources = read_ids(a.src)
    started = time.perf_counter()
    if a.engine == "torch":
        decode, kind, max_len = torch_engine(a)
    else:
        decode, kind, max_len = ctranslate2_engine(a)
    load_seconds = time.perf_counter() - started
    outputs = [[] for _ in sources]
    t0 = time.perf_counter()
    for batch in sorted_batches(sources, a.batch):
        longest = max(len(sources[i]) for i in batch)
        for i, ids in zip(batch, decode([sources[i] for i in batch], min(2 * longest + 10, max_len - 1))):
            outputs[i] = [t for t in ids if t != EOS]
    seconds = time.perf_counter() - t0
    with open(a.out, "w") as f:
        f.writelines(" ".join(map(str, ids)) + "\n" for ids in outputs)
    tokens = sum(len(x) for x in outputs)
    print(json.dumps({"bench": "translate", "impl": a.engine, "engine": kind, "sentences": len(sources),
                      "seconds": seconds, "sentences_per_s": len(sources) / seconds, "target_tokens": tokens,
                      "tokens_per_s": tokens / seconds, "peak_rss_mb": peak_rss_mb(), "load_seconds": load_seconds,
                      "beam": a.beam, "length_penalty": a.length_penalty, "batch": a.batch, "threads": a.threads}))


def torch_engine(a):
    """torch_peer.TransformerSeq2Seq (nn.Transformer, a key/value cache, attn's batched beam
    search) with the exported weights."""
    import torch
    from safetensors.torch import load_file
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import torch_peer
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    kind, c = read_config(a.model)
    check_supported(kind, c)
    model = torch_peer.TransformerSeq2Seq(c["tgt_vocab"], c["d_model"], c["heads"], c["ffn"], c["encoder_layers"],
                                          0.0, max_len=c["max_len"])
    state = {("transformer." + k if k.startswith(("encoder.", "decoder.")) else k): v
             for k, v in load_file(os.path.join(a.model, "model.safetensors")).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if set(missing) != {"pe"} or unexpected:
        sys.exit(f"translate_peer: weights do not fit torch_peer's model: missing {missing}, unexpected {unexpected}")
    model.pe.copy_(torch.from_numpy(sinusoid_table(c["max_len"], c["d_model"])))
    model.eval()

    def decode(rows, max_len):
        src = torch.zeros(len(rows), max(map(len, rows)), dtype=torch.long)
        for r, ids in enumerate(rows):
            src[r, :len(ids)] = torch.tensor(ids)
        return model.beam(src, torch.tensor([len(x) for x in rows]), a.beam, a.length_penalty, max_len)

    return decode, f"torch {torch.__version__} fp32 eager", c["max_len"]


def ctranslate2_engine(a):
    import ctranslate2
    supported = ctranslate2.get_supported_compute_types("cpu")
    if a.compute_type not in supported:
        print(json.dumps({"bench": "translate", "impl": "ctranslate2", "config": a.compute_type,
                          "na": f"n/a (CTranslate2 {ctranslate2.__version__} on this CPU: {', '.join(sorted(supported))})"}))
        sys.exit(0)
    translator = ctranslate2.Translator(a.model, device="cpu", compute_type=a.compute_type,
                                       intra_threads=a.threads, inter_threads=1)
    # Piece id i is the model's vocabulary entry i, whatever its strings are (this converter's
    # decimal ids, or the SentencePiece pieces `attn export --to ctranslate2` writes).
    src_vocab, tgt_vocab = ct2_vocabularies(a.model)
    tgt_index = {t: i for i, t in enumerate(tgt_vocab)}

    def decode(rows, max_decoding_length):
        tokens = [[src_vocab[i] for i in ids] for ids in rows]
        results = translator.translate_batch(tokens, beam_size=a.beam, length_penalty=a.length_penalty,
                                             max_decoding_length=max_decoding_length, max_batch_size=len(rows))
        return [[tgt_index[t] for t in r.hypotheses[0]] for r in results]

    return decode, f"ctranslate2 {ctranslate2.__version__} {a.compute_type}", a.max_positions


def ct2_vocabularies(model_dir):
    """(source, target) token lists of a CTranslate2 model folder (shared or separate, JSON or text)."""
    def read(name):
        for ext, load in ((".json", json.load), (".txt", lambda f: f.read().splitlines())):
            path = os.path.join(model_dir, name + ext)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    return load(f)
        return None
    shared = read("shared_vocabulary")
    if shared is not None:
        return shared, shared
    src, tgt = read("source_vocabulary"), read("target_vocabulary")
    if src is None or tgt is None:
        sys.exit(f"translate_peer: no vocabulary files in {model_dir}")
    return src, tgt


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--torch-export", required=True, help="the folder `attn export --to torch` wrote")
    c.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--engine", required=True, choices=["attn", "torch", "ctranslate2"])
    r.add_argument("--attn", default="build/attn", help="attn: the binary")
    r.add_argument("--src-text", help="attn: the source sentences")
    r.add_argument("--precision", default="fp32", help="attn: fp32, bf16 or int8 (attn translate --precision)")
    r.add_argument("--beam-rules", default="attn", choices=["attn", "ctranslate2"],
                   help="attn: whose beam search rules (attn translate --beam-rules)")
    r.add_argument("--compute-type", default="float32", help="ctranslate2: float32, int8, bfloat16, int8_bfloat16, ...")
    r.add_argument("--model", required=True, help="torch: the attn export --to torch folder; ctranslate2: its model folder")
    r.add_argument("--max-positions", type=int, default=256, help="ctranslate2: the model's positions (max_len)")
    r.add_argument("--src", help="torch, ctranslate2: source piece ids, one sentence a line")
    r.add_argument("--out", required=True)
    r.add_argument("--beam", type=int, default=5)
    r.add_argument("--length-penalty", type=float, default=1.0)
    r.add_argument("--batch", type=int, default=64)
    r.add_argument("--threads", type=int, default=2)
    b = sub.add_parser("bleu")
    b.add_argument("--hyp", required=True)
    b.add_argument("--ref", required=True)
    b.add_argument("--ids", help="the hypotheses as piece ids: their count is the target tokens")
    b.add_argument("--first", type=int, default=0, help="only the first N references (0: all)")
    a = p.parse_args()
    {"convert": convert, "run": run, "bleu": bleu}[a.command](a)


if __name__ == "__main__":
    main()
