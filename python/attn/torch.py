"""attn.torch: attn's fused kernels inside PyTorch models (importable where torch is).

    import attn.torch
    attention = attn.torch.AdditiveAttention(query_dim=256, key_dim=256, attn_dim=256)
    context, weights = attention(query, keys, lengths=lengths)   # torch tensors in and out

Functions (torch.autograd.Function, differentiable in every float input):
    additive_attention(query, projected_keys, values, w_q, bias, v, lengths=None)
        Bahdanau: e = vᵀ tanh(W_q q + k̃_s + b), masked softmax, context = Σ a_s values_s.
        query (B, D) or (B, T, D), projected_keys (B, S, A) = keys W_kᵀ, values (B, S, E)
        -> context (B, E) / (B, T, E), weights (B, S) / (B, T, S)
    sdpa(q, k, v, key_lengths=None, causal=False, bias=None, scale=None, is_causal=False)
        q (B, H, T, Dh), k (B, H, S, Dh), v (B, H, S, Dv) -> out (B, H, T, Dv), weights (B, H, T, S)
        bias (T, S), (B·H, T, S) or (B, H, T, S), differentiable (a learned relative-position or
        ALiBi bias); causal True / "lower_right" (attn's) or "upper_left" = is_causal=True (torch's)
    gru_cell(x, h, w_ih, w_hh, b_ih, b_hh) -> h'           torch.nn.GRUCell's math and layout
    lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh) -> (h', c')  torch.nn.LSTMCell's
    luong_attention(query, keys, values, lengths=None, score="dot", w=None, v=None)
    location_attention(query, values, w_a, b_a, lengths=None)
    local_attention(query, keys, values, lengths=None, mode="monotonic", window=10,
                    score="general", w=None, positions=None, w_p=None, v_p=None)
        -> context, weights, as attn's ops of those names
Modules: AdditiveAttention, LuongAttention, LocationAttention, LocalAttention,
ScaledDotProductAttention, MultiheadAttention (torch's arguments, parameters and masks, attn's
fused SDPA inside), GRUCell, LSTMCell (torch's
parameter names for the cells, so their state dicts load into torch.nn.GRUCell/LSTMCell).

Data (to_attn): float inputs must be float32 CPU tensors. A CUDA tensor, or float64 /
float16 / bool / complex data, is an error naming the argument (attn computes in float32 on
the CPU; convert with .cpu() / .float() yourself). A contiguous float32 tensor is shared,
not copied: the attn tensor borrows its memory (through t.numpy(), which keeps the torch
storage alive; any 4-byte alignment will do, attn's kernels load unaligned). A
non-contiguous one is made contiguous first (one copy, then shared). Lengths are integer
tensors (B): int32 is shared too, other integer dtypes are copied into int32 with every
value checked to fit. Outputs and gradients come
back without a copy (torch.from_numpy over attn's buffer).

Forward records nothing on attn's tape, so any number of calls can be in flight (a
decoder's T steps) before torch's backward reaches them. additive_attention's backward runs
attn's backward kernels on the weights its forward saved; the others' backward recomputes
the op's forward on attn's tape, then runs attn's backward (one extra forward per call).
Do not leave an attn-native graph pending (an attn.backward not yet called) across a
torch backward through these functions: attn's tape is per thread and would run it too.
"""
try:
    import torch
except ImportError as error:  # pragma: no cover - depends on the machine
    raise ImportError("attn.torch needs PyTorch (Debian: apt-get install python3-torch)") from error

import numpy as np

from . import _attn

__all__ = ["additive_attention", "luong_attention", "location_attention", "local_attention", "sdpa", "gru_cell",
           "lstm_cell", "AdditiveAttention", "LuongAttention", "LocationAttention", "LocalAttention",
           "ScaledDotProductAttention", "MultiheadAttention", "GRUCell", "LSTMCell", "to_attn", "to_torch"]


def to_attn(t, name, op, requires_grad=False):
    """An attn.Tensor for torch tensor t: float32 and int32 share t's memory (no copy; a
    non-contiguous t is made contiguous first), other integers are copied into int32 (checked)."""
    if t is None:
        return None
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{op}: '{name}' must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise ValueError(f"{op}: '{name}' is on {t.device}; attn's kernels run on the CPU (pass {name}.cpu())")
    if t.is_floating_point() and t.dtype != torch.float32:
        raise TypeError(f"{op}: '{name}' must be float32 (attn computes in float32), got {t.dtype}; "
                        f"convert with .float()")
    if t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{op}: '{name}' must be float32 or integer, got {t.dtype}")
    data = t.detach().contiguous().numpy()
    shared = t.dtype in (torch.float32, torch.int32)  # attn's own dtypes: no conversion needed
    return _attn.borrow(data, requires_grad) if shared else _attn.tensor(data, requires_grad)


def to_torch(a):
    """A torch tensor over attn.Tensor a's storage (no copy; it keeps the storage alive)."""
    return None if a is None else torch.from_numpy(a.numpy())


def as_tuple(result):
    return tuple(result) if isinstance(result, (tuple, list)) or hasattr(result, "__iter__") else (result,)


class AttnFunction(torch.autograd.Function):
    """Runs attn op `call(*attn_inputs)` (returning a tuple of outputs) on torch tensors.

    `differentiable` lists, per input, whether it is a float input that may get a gradient."""

    @staticmethod
    def forward(ctx, call, op, names, differentiable, *inputs):
        ctx.call, ctx.op, ctx.names, ctx.differentiable = call, op, names, differentiable
        ctx.save_for_backward(*inputs)
        with _attn.no_grad():
            outputs = call(*[to_attn(t, n, op) for t, n in zip(inputs, names)])
        ctx.num_outputs = len(outputs)
        return tuple(to_torch(o) for o in outputs)

    @staticmethod
    def backward(ctx, *grads):
        inputs = ctx.saved_tensors
        needs = ctx.needs_input_grad[4:]
        attn_inputs = [to_attn(t, n, ctx.op, requires_grad=need and d)
                       for t, n, need, d in zip(inputs, ctx.names, needs, ctx.differentiable)]
        outputs = ctx.call(*attn_inputs)
        pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None and o is not None and o.requires_grad]
        if pairs:
            seeds = [to_attn(g, "grad", ctx.op) for _, g in pairs]
            if len(pairs) == 1:
                _attn.backward(pairs[0][0], seeds[0])
            else:  # one root: Σ_i sum(output_i · seed_i)
                total = _attn.sum(_attn.mul(pairs[0][0], seeds[0]))
                for (o, _), s in zip(pairs[1:], seeds[1:]):
                    total = _attn.add(total, _attn.sum(_attn.mul(o, s)))
                _attn.backward(total)
        result = []
        for t, a, need in zip(inputs, attn_inputs, needs):
            if not need or a is None or not a.requires_grad:
                result.append(None)
            else:
                result.append(to_torch(a.grad) if a.grad is not None else torch.zeros_like(t))
        return (None, None, None, None) + tuple(result)


def apply(call, op, named_inputs, differentiable):
    names = tuple(n for n, _ in named_inputs)
    return AttnFunction.apply(call, op, names, differentiable, *(t for _, t in named_inputs))


ADDITIVE_NAMES = ("query", "projected_keys", "values", "w_q", "bias", "v", "lengths")


class AdditiveFunction(torch.autograd.Function):
    """additive_attention without AttnFunction's recomputation: forward saves the weights it
    returns, backward hands them to attn's backward kernels (_attn._additive_attention_backward),
    so a call runs the O(B·T·S·A) tanh scores twice (forward, backward), not three times."""

    @staticmethod
    def forward(ctx, *inputs):
        op = "attn.torch.additive_attention"
        with _attn.no_grad():
            context, weights = as_tuple(_attn.additive_attention(
                *[to_attn(t, n, op) for t, n in zip(inputs, ADDITIVE_NAMES)], need_weights=True))
        context, weights = to_torch(context), to_torch(weights)
        ctx.save_for_backward(*inputs, weights)  # torch's version counters guard them
        return context, weights

    @staticmethod
    def backward(ctx, dcontext, dweights):
        op = "attn.torch.additive_attention"
        *inputs, weights = ctx.saved_tensors
        attn_inputs = [to_attn(t, n, op) for t, n in zip(inputs, ADDITIVE_NAMES)]
        grads = _attn._additive_attention_backward(*attn_inputs, to_attn(weights, "weights", op),
                                                   to_attn(dcontext, "grad", op), to_attn(dweights, "grad", op))
        return tuple(to_torch(g) if need else None for g, need in zip(grads, ctx.needs_input_grad)) + (None,)


def additive_attention(query, projected_keys, values, w_q, bias, v, lengths=None):
    return AdditiveFunction.apply(query, projected_keys, values, w_q, bias, v, lengths)


def luong_attention(query, keys, values, lengths=None, score="dot", w=None, v=None):
    def call(q, k, vals, lens, ww, vv):
        return as_tuple(_attn.luong_attention(q, k, vals, lens, score=score, w=ww, v=vv, need_weights=True))
    return apply(call, "attn.torch.luong_attention",
                 [("query", query), ("keys", keys), ("values", values), ("lengths", lengths), ("w", w), ("v", v)],
                 (True, True, True, False, True, True))


def location_attention(query, values, w_a, b_a, lengths=None):
    def call(q, vals, wa, ba, lens):
        return as_tuple(_attn.location_attention(q, vals, wa, ba, lens, need_weights=True))
    return apply(call, "attn.torch.location_attention",
                 [("query", query), ("values", values), ("w_a", w_a), ("b_a", b_a), ("lengths", lengths)],
                 (True, True, True, True, False))


def local_attention(query, keys, values, lengths=None, mode="monotonic", window=10, score="general", w=None,
                    positions=None, w_p=None, v_p=None):
    def call(q, k, vals, lens, ww, pos, wp, vp):
        return as_tuple(_attn.local_attention(q, k, vals, lens, mode=mode, window=window, score=score, w=ww,
                                              positions=pos, w_p=wp, v_p=vp, need_weights=True))
    return apply(call, "attn.torch.local_attention",
                 [("query", query), ("keys", keys), ("values", values), ("lengths", lengths), ("w", w),
                  ("positions", positions), ("w_p", w_p), ("v_p", v_p)],
                 (True, True, True, False, True, False, True, True))


def sdpa(q, k, v, key_lengths=None, causal=False, bias=None, scale=None, is_causal=False):
    def call(qa, ka, va, lens, b):
        out, weights = _attn.sdpa(qa, ka, va, key_lengths=lens, causal=causal, is_causal=is_causal, bias=b,
                                  scale=0.0 if scale is None else float(scale), need_weights=True)
        return out, weights
    return apply(call, "attn.torch.sdpa", [("q", q), ("k", k), ("v", v), ("key_lengths", key_lengths),
                                           ("bias", bias)], (True, True, True, False, True))


def gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    def call(*args):
        return (_attn.gru_cell(*args),)
    return apply(call, "attn.torch.gru_cell", [("x", x), ("h", h), ("w_ih", w_ih), ("w_hh", w_hh),
                                               ("b_ih", b_ih), ("b_hh", b_hh)], (True,) * 6)[0]


def lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
    def call(*args):
        return tuple(_attn.lstm_cell(*args))
    return apply(call, "attn.torch.lstm_cell", [("x", x), ("h", h), ("c", c), ("w_ih", w_ih), ("w_hh", w_hh),
                                                ("b_ih", b_ih), ("b_hh", b_hh)], (True,) * 7)


class AdditiveAttention(torch.nn.Module):
    """Bahdanau attention with attn's fused kernel. Parameters w_q (A, D), w_k (A, E),
    bias (A), v (A), initialised as attn's additive_attention_init (Xavier, zero bias).

    forward(query, keys, values=None, lengths=None, projected_keys=None) -> (context, weights)
      query (B, D) or (B, T, D); keys (B, S, E); values default to keys; lengths (B) or None.
      projected_keys = keys W_kᵀ (B, S, A): pass project_keys(keys) once per batch when
      attending with many queries (a decoder's steps) to skip recomputing it."""

    def __init__(self, query_dim, key_dim, attn_dim, seed=0):
        super().__init__()
        init = _attn.additive_attention_init(query_dim, key_dim, attn_dim, seed=seed)
        for name in ("w_q", "w_k", "bias", "v"):
            self.register_parameter(name, torch.nn.Parameter(torch.from_numpy(np.array(init[name].numpy()))))

    def project_keys(self, keys):
        return torch.nn.functional.linear(keys, self.w_k)

    def forward(self, query, keys, values=None, lengths=None, projected_keys=None):
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        return additive_attention(query, projected_keys, keys if values is None else values, self.w_q, self.bias,
                                  self.v, lengths)


def parameters_from(module, init):
    """Registers attn's initialised parameters (a {name: attn.Tensor} dict) as torch Parameters."""
    for name, value in init.items():
        if value is not None:
            module.register_parameter(name, torch.nn.Parameter(torch.from_numpy(np.array(value.numpy()))))


class LuongAttention(torch.nn.Module):
    """Luong global attention with attn's fused kernel: score "dot" (no parameters), "general"
    (w (D, E)) or "concat" (w (A, D+E), v (A)). forward(query (B, D), keys (B, S, E),
    values=None (the keys), lengths=None) -> (context (B, E), weights (B, S))."""

    def __init__(self, score, query_dim, key_dim, attn_dim=0, seed=0):
        super().__init__()
        self.score = score
        parameters_from(self, _attn.luong_attention_init(score, query_dim, key_dim, attn_dim, seed=seed))

    def forward(self, query, keys, values=None, lengths=None):
        return luong_attention(query, keys, keys if values is None else values, lengths, self.score,
                               getattr(self, "w", None), getattr(self, "v", None))


class LocationAttention(torch.nn.Module):
    """Luong location attention: weights = softmax over the first S of W_a q + b_a, parameters
    w_a (S_max, D), b_a (S_max). forward(query (B, D), values (B, S, E), lengths=None)."""

    def __init__(self, query_dim, max_src_len, seed=0):
        super().__init__()
        parameters_from(self, _attn.location_attention_init(query_dim, max_src_len, seed=seed))

    def forward(self, query, values, lengths=None):
        return location_attention(query, values, self.w_a, self.b_a, lengths)


class LocalAttention(torch.nn.Module):
    """Luong local attention: mode "monotonic" (local-m: p_t = t, or `positions`) or
    "predictive" (local-p: p_t = S·sigmoid(v_pᵀ tanh(W_p h_t)), parameters w_p (A, D), v_p (A)),
    a window of ±window, score "dot" or "general" (w (D, E)).
    forward(query (B, D), keys (B, S, E), values=None, lengths=None, positions=None)."""

    def __init__(self, mode, score, query_dim, key_dim, attn_dim=0, window=10, seed=0):
        super().__init__()
        self.mode, self.score, self.window = mode, score, window
        parameters_from(self, _attn.local_attention_init(mode, score, query_dim, key_dim, attn_dim, seed=seed))

    def forward(self, query, keys, values=None, lengths=None, positions=None):
        return local_attention(query, keys, keys if values is None else values, lengths, self.mode, self.window,
                               self.score, getattr(self, "w", None), positions, getattr(self, "w_p", None),
                               getattr(self, "v_p", None))


class ScaledDotProductAttention(torch.nn.Module):
    """softmax(q kᵀ / √Dh + bias, causal / length masks) v, returning the weights too."""

    def __init__(self, causal=False, is_causal=False):
        super().__init__()
        self.causal, self.is_causal = causal, is_causal

    def forward(self, q, k, v, key_lengths=None, bias=None):
        return sdpa(q, k, v, key_lengths=key_lengths, causal=self.causal, bias=bias, is_causal=self.is_causal)


class MultiheadAttention(torch.nn.Module):
    """torch.nn.MultiheadAttention's arguments, parameters (so state dicts load both ways) and
    call, with softmax(q kᵀ/√Dh + mask) v on attn's fused SDPA kernel (the projections stay
    torch's F.linear). key_padding_mask: bool (B, S), True = ignore; attn_mask: bool (T, S) or
    (B·H, T, S), True = not allowed, or float of those shapes, added (learnable); is_causal as
    torch's (top-left). dropout must be 0 (attn's SDPA has no weight dropout here); a row whose
    every key is masked gets NaN, as in torch."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False):
        super().__init__()
        if dropout != 0.0 or add_bias_kv or add_zero_attn:
            raise ValueError("attn.torch.MultiheadAttention: dropout, add_bias_kv and add_zero_attn are not "
                             "supported (use torch.nn.MultiheadAttention for them)")
        reference = torch.nn.MultiheadAttention(embed_dim, num_heads, bias=bias, kdim=kdim, vdim=vdim,
                                                batch_first=batch_first)
        self.embed_dim, self.num_heads, self.batch_first = embed_dim, num_heads, batch_first
        self.head_dim = embed_dim // num_heads
        for name, p in reference.named_parameters(recurse=False):  # torch's names and initialisation
            self.register_parameter(name, p)
        self.out_proj = reference.out_proj

    def projections(self):
        E = self.embed_dim
        if hasattr(self, "in_proj_weight"):
            w = self.in_proj_weight.split(E)
        else:
            w = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias.split(E) if getattr(self, "in_proj_bias", None) is not None else (None,) * 3
        return w, b

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        if not self.batch_first:  # (L, B, E) -> (B, L, E)
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        B, T, S, H, Dh = query.shape[0], query.shape[1], key.shape[1], self.num_heads, self.head_dim
        (wq, wk, wv), (bq, bk, bv) = self.projections()
        q, k, v = (torch.nn.functional.linear(x, w, b).reshape(B, -1, H, Dh).transpose(1, 2).contiguous()
                   for x, w, b in ((query, wq, bq), (key, wk, bk), (value, wv, bv)))       # (B, H, L, Dh)
        bias = mask_bias(attn_mask, key_padding_mask, B, H, T, S, q.dtype)
        out, weights = sdpa(q, k, v, bias=bias, is_causal=is_causal)                        # (B, H, T, Dh)
        out = self.out_proj(out.transpose(1, 2).reshape(B, T, self.embed_dim))
        if not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        return out, weights.mean(1) if average_attn_weights else weights


def mask_bias(attn_mask, key_padding_mask, B, H, T, S, dtype):
    """attn_mask and key_padding_mask as one float bias for sdpa: (T, S), (B, H, T, S) or None."""
    def as_float(mask, what):
        if mask.dtype == torch.bool:
            return torch.zeros(mask.shape, dtype=dtype).masked_fill(mask, float("-inf"))
        if mask.dtype != dtype:
            raise TypeError(f"attn.torch.MultiheadAttention: '{what}' must be bool or {dtype}, got {mask.dtype}")
        return mask
    bias = None
    if attn_mask is not None:
        if tuple(attn_mask.shape) not in ((T, S), (B * H, T, S)):
            raise ValueError(f"attn.torch.MultiheadAttention: 'attn_mask' must be (T, S) = ({T}, {S}) or "
                             f"(B·H, T, S) = ({B * H}, {T}, {S}), got {tuple(attn_mask.shape)}")
        bias = as_float(attn_mask, "attn_mask")
        if bias.dim() == 3:
            bias = bias.reshape(B, H, T, S)
    if key_padding_mask is not None:
        if key_padding_mask.dtype != torch.bool:
            raise TypeError("attn.torch.MultiheadAttention: 'key_padding_mask' must be bool (True = ignore, as "
                            f"torch's), got {key_padding_mask.dtype}")
        if tuple(key_padding_mask.shape) != (B, S):
            raise ValueError(f"attn.torch.MultiheadAttention: 'key_padding_mask' must be (B, S) = ({B}, {S}), "
                             f"got {tuple(key_padding_mask.shape)}")
        padding = as_float(key_padding_mask, "key_padding_mask")[:, None, None, :]         # (B, 1, 1, S)
        bias = (padding if bias is None else bias + padding).expand(B, H, T, S)
    return bias


class CellBase(torch.nn.Module):
    gates = 0

    def __init__(self, input_size, hidden_size):
        super().__init__()
        reference = (torch.nn.GRUCell if self.gates == 3 else torch.nn.LSTMCell)(input_size, hidden_size)
        self.input_size, self.hidden_size = input_size, hidden_size
        for name, p in reference.named_parameters():  # torch's names, shapes and initialisation
            self.register_parameter(name, p)

    def zeros(self, x):
        return x.new_zeros(x.shape[0], self.hidden_size)


class GRUCell(CellBase):
    """torch.nn.GRUCell (same parameters) stepping with attn's fused GRU kernel."""
    gates = 3

    def forward(self, input, hx=None):
        h = self.zeros(input) if hx is None else hx
        return gru_cell(input, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class LSTMCell(CellBase):
    """torch.nn.LSTMCell (same parameters) stepping with attn's fused LSTM kernel."""
    gates = 4

    def forward(self, input, hx=None):
        h, c = (self.zeros(input), self.zeros(input)) if hx is None else hx
        return lstm_cell(input, h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
