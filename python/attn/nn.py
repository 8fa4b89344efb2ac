"""attn.nn: modules with PyTorch's constructors, parameter names, state_dict and masks.

Every class here takes the arguments of its torch.nn namesake (plus a keyword-only `seed`
for the initial weights) and names its parameters as torch does, so

    torch_module.load_state_dict(attn_module.state_dict())
    attn_module.load_state_dict(torch_module.state_dict())

both work. Values are copied, shapes and names checked (strict, like torch's default).
attn's own modules, with attn's calling conventions (batch-first MultiheadAttention with an
int32 keep-mask `key_keep_mask`, nonzero = keep), stay in attn._attn.nn; the ones without a
PyTorch counterpart (Transformer stacks, KV caches, ...) are re-exported here unchanged.

Masks follow PyTorch and nothing else: MultiheadAttention's key_padding_mask is boolean,
True = ignore; attn_mask is boolean (True = not allowed) or float (added to the scores).
A mask of another dtype is an error, never reinterpreted. One difference: a query whose
every key is masked gets zero weights and a zero output here, NaN in PyTorch.
"""
from collections import OrderedDict

import numpy as np

from . import _attn
from ._attn import ShapeError, Tensor, ValueError_ as ValueError  # noqa: A001

_native = _attn.nn
# attn's modules without a PyTorch-convention version here, re-exported as they are.
for _name in dir(_native):
    if not _name.startswith("_"):
        globals()[_name] = getattr(_native, _name)
del _name


def as_array(value, what):
    """A numpy view/copy of a torch tensor, numpy array or attn Tensor (for copying weights)."""
    if isinstance(value, Tensor):
        return value.numpy()
    if isinstance(value, np.ndarray):
        return value
    if type(value).__module__.startswith("torch"):
        return value.detach().cpu().numpy()
    raise TypeError(f"{what}: expected a numpy array, torch tensor or attn.Tensor, got {type(value).__name__}")


def is_torch(value):
    return type(value).__module__.startswith("torch")


class Module:
    """The base class for Python modules: subclass it as torch.nn.Module.

    Assigning a Module (or a native attn module) to an attribute registers it as a child;
    parameters are registered with register_parameter(name, tensor). forward() is called
    by __call__."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_modules" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning '{name}'")
        if isinstance(value, (Module, _native.Module)):
            self._modules[name] = value
        elif name in self._parameters:
            if not isinstance(value, Tensor):
                raise TypeError(f"{type(self).__name__}.{name} is a parameter: assign an attn.Tensor")
            self._parameters[name] = value
        object.__setattr__(self, name, value)

    def register_parameter(self, name, tensor):
        if not name or "." in name:
            raise KeyError(f"register_parameter: the name must be non-empty without '.', got {name!r}")
        if not isinstance(tensor, Tensor) or tensor.dtype != "float32":
            raise TypeError(f"register_parameter: '{name}' must be a float32 attn.Tensor")
        if not tensor.requires_grad:
            tensor.requires_grad_(True)
        self._parameters[name] = tensor
        object.__setattr__(self, name, tensor)

    def register_module(self, name, module):
        setattr(self, name, module)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_parameters(self, prefix=""):
        out = [(prefix + n, t) for n, t in self._parameters.items()]
        for child_name, child in self._modules.items():
            child_prefix = f"{prefix}{child_name}."
            if isinstance(child, Module):
                out += child.named_parameters(child_prefix)
            else:
                out += [(child_prefix + n, t) for n, t in dict(child.named_parameters()).items()]
        return out

    def parameters(self):
        return [t for _, t in self.named_parameters()]

    def state_dict(self):
        """OrderedDict {torch's name: attn.Tensor}, the live parameters. torch's
        load_state_dict takes it as it is (attn.Tensor converts itself for torch)."""
        return OrderedDict(self.named_parameters())

    def load_state_dict(self, state_dict, strict=True):
        """Copies {name: torch tensor, numpy array or attn.Tensor} into the parameters.
        strict: every name must match (missing or unexpected names are a KeyError);
        otherwise names absent on either side are skipped. Shapes must match exactly."""
        own = OrderedDict(self.named_parameters())
        missing = [n for n in own if n not in state_dict]
        unexpected = [n for n in state_dict if n not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: {type(self).__name__} missing {missing}, unexpected {unexpected}")
        for name, target in own.items():
            if name not in state_dict:
                continue
            source = as_array(state_dict[name], f"load_state_dict '{name}'")
            if tuple(source.shape) != tuple(target.shape):
                raise ShapeError(f"load_state_dict: '{name}' expected shape {tuple(target.shape)}, "
                                 f"got {tuple(source.shape)}")
            if source.dtype.kind != "f":
                raise TypeError(f"load_state_dict: '{name}' must be floating point, got {source.dtype}")
            target.numpy()[...] = source  # float64 rounds to float32, as attn.tensor does
        return missing, unexpected

    def train(self, mode=True):
        object.__setattr__(self, "training", mode)
        for child in self._modules.values():
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self, set_to_none=True):
        for t in self.parameters():
            t.zero_grad()

    def num_parameters(self):
        return sum(int(np.prod(t.shape)) for t in self.parameters())


class Sequential(Module):
    """torch.nn.Sequential: Sequential(m0, m1, ...) or Sequential(OrderedDict(name=m)); the
    children are named "0", "1", ... (state_dict names "0.weight", as torch's), and forward
    passes each one's output to the next."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            items = list(modules[0].items())
        else:
            items = [(str(i), m) for i, m in enumerate(modules)]
        for name, m in items:
            if not isinstance(m, (Module, _native.Module)):
                raise TypeError(f"Sequential: item {name!r} must be an attn.nn module, got {type(m).__name__}")
            setattr(self, name, m)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index):
        return list(self._modules.values())[index]

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input


class Activation(Module):
    fn = None

    def forward(self, input):
        return type(self).fn(input)


class ReLU(Activation):
    fn = _attn.relu


class Tanh(Activation):
    fn = _attn.tanh


class Sigmoid(Activation):
    fn = _attn.sigmoid


class GELU(Activation):
    fn = _attn.gelu


class Wrapper(Module):
    """A torch-convention front for one native module, whose parameters it shares (its
    parameter names are the native module's, which are PyTorch's)."""

    def __init__(self, native):
        super().__init__()
        object.__setattr__(self, "native", native)

    def named_parameters(self, prefix=""):
        return [(prefix + n, t) for n, t in dict(self.native.named_parameters()).items()]

    def train(self, mode=True):
        self.native.train(mode)
        return super().train(mode)

    def __getattr__(self, name):  # weight, bias, weight_ih, ... of the native module
        if name == "native":
            raise AttributeError(name)
        return getattr(self.native, name)


class Linear(Wrapper):
    def __init__(self, in_features, out_features, bias=True, *, seed=0):
        super().__init__(_native.Linear(in_features, out_features, bias=bias, seed=seed))
        self.in_features, self.out_features = in_features, out_features

    def forward(self, input):
        return self.native(input)


class Embedding(Wrapper):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, *, seed=0):
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx must be in [-{num_embeddings}, {num_embeddings}), "
                                 f"got {padding_idx}")
            padding_idx %= num_embeddings
        super().__init__(_native.Embedding(num_embeddings, embedding_dim,
                                           padding_idx=-1 if padding_idx is None else padding_idx, seed=seed))
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim

    def forward(self, input):
        return self.native(input)


class LayerNorm(Wrapper):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        if len(shape) != 1:
            raise ValueError(f"LayerNorm: attn normalises the last dimension only; normalized_shape must be one "
                             f"size, got {shape}")
        if not elementwise_affine:
            raise ValueError("LayerNorm: elementwise_affine=False is not supported (attn's LayerNorm has weight and bias)")
        super().__init__(_native.LayerNorm(shape[0], eps=eps))
        self.normalized_shape = shape

    def forward(self, input):
        return self.native(input)


def zeros_state(x, hidden_size):
    return _attn.zeros([x.shape[0], hidden_size])


class RNNCellBase(Wrapper):
    native_class = None

    def __init__(self, input_size, hidden_size, bias=True, *, seed=0):
        if not bias:
            raise ValueError(f"{type(self).__name__}: bias=False is not supported")
        super().__init__(self.native_class(input_size, hidden_size, seed=seed))


class GRUCell(RNNCellBase):
    native_class = _native.GRUCell

    def forward(self, input, hx=None):
        """input (B, I), hx (B, H) or None for zeros -> h' (B, H)."""
        return self.native(input, zeros_state(input, self.native.hidden_size) if hx is None else hx)


class LSTMCell(RNNCellBase):
    native_class = _native.LSTMCell

    def forward(self, input, hx=None):
        """input (B, I), hx (h, c) each (B, H), or None for zeros -> (h', c')."""
        if hx is None:
            hx = (zeros_state(input, self.native.hidden_size),) * 2
        return self.native(input, hx[0], hx[1])


def mask_array(mask, what):
    """A boolean or float numpy array from a numpy / torch mask; attn.Tensor masks (int32,
    whose polarity is ambiguous) are refused."""
    if isinstance(mask, Tensor):
        if mask.dtype == "float32":
            return mask.numpy()
        raise TypeError(f"{what}: an int32 attn.Tensor is ambiguous (attn's keep-mask or PyTorch's ignore-mask?); "
                        f"pass a boolean numpy array or torch tensor (True = ignore, PyTorch's convention)")
    return as_array(mask, what)


class MultiheadAttention(Wrapper):
    """torch.nn.MultiheadAttention: same arguments, parameter names and masks.

    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
            average_attn_weights=True) -> (attn_output, attn_output_weights or None)
      query (T, B, D), key (S, B, kdim), value (S, B, vdim); (B, T, D) ... with batch_first.
      key_padding_mask  bool (B, S), True = ignore this key.
      attn_mask         bool (T, S) or (B·H, T, S), True = not allowed, or float of those shapes
                        added to the scores (an attn.Tensor that requires grad gets its gradient)
      weights           (B, T, S) averaged over heads, or (B, H, T, S)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, *, seed=0):
        if add_bias_kv or add_zero_attn:
            raise ValueError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported")
        super().__init__(_native.MultiheadAttention(embed_dim, num_heads, kdim=kdim or 0, vdim=vdim or 0, bias=bias,
                                                    dropout=dropout, seed=seed))
        self.batch_first = batch_first
        self.num_heads = num_heads

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True):
        for name, x in (("query", query), ("key", key), ("value", value)):
            if not isinstance(x, Tensor) or len(x.shape) != 3:
                layout = "(B, L, E)" if self.batch_first else "(L, B, E)"
                got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
                raise ShapeError(f"MultiheadAttention: '{name}' expected a 3-d attn.Tensor {layout}, got {got}")
        if not self.batch_first:
            query, key, value = (_attn.transpose_01(x) for x in (query, key, value))
        B, T, S = query.shape[0], query.shape[1], key.shape[1]
        options = {}
        if key_padding_mask is not None:
            kpm = mask_array(key_padding_mask, "MultiheadAttention key_padding_mask")
            if kpm.dtype != np.bool_:
                raise TypeError(f"MultiheadAttention: key_padding_mask must be boolean (True = ignore), got {kpm.dtype}")
            if kpm.shape != (B, S):
                raise ShapeError(f"MultiheadAttention: 'key_padding_mask' expected (B={B}, S={S}), got {kpm.shape}")
            options["key_keep_mask"] = _attn.tensor(~kpm)
        if attn_mask is not None:
            mask = mask_array(attn_mask, "MultiheadAttention attn_mask")
            BH = B * self.num_heads
            if mask.shape not in ((T, S), (BH, T, S)):
                raise ShapeError(f"MultiheadAttention: 'attn_mask' expected (T={T}, S={S}) or (B·H={BH}, T, S), "
                                 f"got {mask.shape}")
            if mask.dtype == np.bool_:
                mask = np.where(mask, np.float32(-np.inf), np.float32(0))
            elif mask.dtype.kind != "f":
                raise TypeError(f"MultiheadAttention: attn_mask must be boolean or float, got {mask.dtype}")
            bias = attn_mask if isinstance(attn_mask, Tensor) else _attn.tensor(np.ascontiguousarray(mask, np.float32))
            options["attn_bias"] = bias
        out, weights = self.native(query, key, value, need_weights=need_weights,
                                   average_weights=need_weights and average_attn_weights, **options)
        if not self.batch_first:
            out = _attn.transpose_01(out)
        return out, weights


class RNNBase(Module):
    """torch.nn.GRU / LSTM: (num_layers, bidirectional, batch_first), torch's parameter names
    (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, ..._reverse) and initialisation
    U(-1/√H, 1/√H); each step is attn's fused cell op. Input (T, B, I), or (B, T, I) with
    batch_first; every sequence has length T (no packing)."""
    gates = 0

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, *, seed=0):
        super().__init__()
        if not bias or dropout:
            raise ValueError(f"{type(self).__name__}: bias=False and dropout between layers are not supported")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.batch_first, self.directions = batch_first, 2 if bidirectional else 1
        rng = np.random.default_rng(seed)
        bound = 1.0 / np.sqrt(hidden_size)
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size * self.directions
            for suffix in ("", "_reverse")[:self.directions]:
                for kind, shape in (("weight_ih", (self.gates * hidden_size, in_size)),
                                    ("weight_hh", (self.gates * hidden_size, hidden_size)),
                                    ("bias_ih", (self.gates * hidden_size,)), ("bias_hh", (self.gates * hidden_size,))):
                    values = rng.uniform(-bound, bound, shape).astype(np.float32)
                    self.register_parameter(f"{kind}_l{layer}{suffix}", _attn.tensor(values))

    def step(self, x, state, p):
        raise NotImplementedError

    def initial_states(self, hx, B):
        """[per layer·direction: (h,) or (h, c), each (B, H)] from hx (L·dirs, B, H) (LSTM: a
        pair) or zeros."""
        n, count = self.num_layers * self.directions, 1 if self.gates == 3 else 2
        if hx is None:
            return [tuple(_attn.zeros([B, self.hidden_size]) for _ in range(count)) for _ in range(n)]
        parts = (hx,) if count == 1 else tuple(hx)
        if len(parts) != count:
            raise ValueError(f"{type(self).__name__}: 'hx' must be (h_0, c_0)")
        for t in parts:
            if tuple(t.shape) != (n, B, self.hidden_size):
                raise ShapeError(f"{type(self).__name__}: 'hx' expected (L·dirs={n}, B={B}, H={self.hidden_size}), "
                                 f"got {tuple(t.shape)}")
        return [tuple(t[i] for t in parts) for i in range(n)]

    def forward(self, input, hx=None):
        if not isinstance(input, Tensor) or len(input.shape) != 3:
            raise ShapeError(f"{type(self).__name__}: 'input' expected a 3-d attn.Tensor, got "
                             f"{getattr(input, 'shape', type(input).__name__)}")
        x = _attn.transpose_01(input) if self.batch_first else input  # (T, B, I)
        T, B = x.shape[0], x.shape[1]
        steps = [x[t] for t in range(T)]  # (B, I) each
        states = self.initial_states(hx, B)
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for d, suffix in enumerate(("", "_reverse")[:self.directions]):
                p = [self._parameters[f"{k}_l{layer}{suffix}"] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
                state, out = states[layer * self.directions + d], [None] * T
                for t in (reversed(range(T)) if suffix else range(T)):
                    state = self.step(steps[t], state, p)
                    out[t] = state[0]
                outputs.append(out)
                finals.append(state)
            steps = outputs[0] if self.directions == 1 else [_attn.concat([f, b]) for f, b in zip(*outputs)]
        output = _attn.stack_rows(steps)  # (T, B, dirs·H)
        if self.batch_first:
            output = _attn.transpose_01(output)
        final = tuple(_attn.stack_rows([s[i] for s in finals]) for i in range(len(finals[0])))
        return output, final[0] if self.gates == 3 else final


class GRU(RNNBase):
    gates = 3

    def step(self, x, state, p):
        return (_attn.gru_cell(x, state[0], *p),)


class LSTM(RNNBase):
    gates = 4

    def step(self, x, state, p):
        return tuple(_attn.lstm_cell(x, state[0], state[1], *p))


def padding_lengths(mask, B, S, what):
    """A bool (B, S) key_padding_mask (True = padding) -> int32 lengths (B); attn's Transformer
    layers take padding at the end of each row only, anything else is an error."""
    m = mask_array(mask, what)
    if m.dtype != np.bool_:
        raise TypeError(f"{what} must be boolean (True = padding), got {m.dtype}")
    if m.shape != (B, S):
        raise ShapeError(f"{what} expected (B={B}, S={S}), got {m.shape}")
    lengths = S - m.sum(1)
    if not np.array_equal(m, np.arange(S)[None, :] >= lengths[:, None]):
        raise ValueError(f"{what}: attn's Transformer layers take padding at the end of each row only")
    return _attn.tensor(lengths.astype(np.int32))


def is_causal(mask, T, what):
    """True for PyTorch's causal mask (T, T): bool True above the diagonal, or float -inf above
    and 0 on and below it; None is False; any other mask is an error."""
    if mask is None:
        return False
    m = mask_array(mask, what)
    above = np.triu(np.ones((T, T), bool), k=1)
    if m.shape == (T, T) and ((m.dtype == np.bool_ and np.array_equal(m, above)) or
                              (m.dtype.kind == "f" and np.all(m[above] == -np.inf) and np.all(m[~above] == 0))):
        return True
    raise ValueError(f"{what}: attn's Transformer layers take only the causal (T={T}, T) mask "
                     f"(e.g. torch.nn.Transformer.generate_square_subsequent_mask), got {m.dtype} {m.shape}")


class TransformerLayerBase(Wrapper):
    native_class = None

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, *, seed=1):
        if not isinstance(activation, str):
            raise TypeError(f"{type(self).__name__}: activation must be 'relu' or 'gelu' (a name), got "
                            f"{type(activation).__name__}")
        super().__init__(self.native_class(d_model, nhead, ffn=dim_feedforward, dropout=dropout,
                                           norm_first=norm_first, activation=activation, eps=layer_norm_eps,
                                           seed=seed))
        self.batch_first = batch_first

    def batch_major(self, x, name):
        if not isinstance(x, Tensor) or len(x.shape) != 3:
            raise ShapeError(f"{type(self).__name__}: '{name}' expected a 3-d attn.Tensor, got "
                             f"{getattr(x, 'shape', type(x).__name__)}")
        return x if self.batch_first else _attn.transpose_01(x)


class TransformerEncoderLayer(TransformerLayerBase):
    """torch.nn.TransformerEncoderLayer's arguments and names. forward(src, src_mask=None,
    src_key_padding_mask=None): src_mask None or the causal mask; padding at row ends."""
    native_class = _native.TransformerEncoderLayer

    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        x = self.batch_major(src, "src")
        B, S = x.shape[0], x.shape[1]
        lengths = None if src_key_padding_mask is None else \
            padding_lengths(src_key_padding_mask, B, S, "TransformerEncoderLayer: 'src_key_padding_mask'")
        out = self.native.forward(x, lengths, causal=is_causal(src_mask, S, "TransformerEncoderLayer: 'src_mask'"))
        return out if self.batch_first else _attn.transpose_01(out)


class TransformerDecoderLayer(TransformerLayerBase):
    """torch.nn.TransformerDecoderLayer's arguments and names. attn's decoder layer is always
    causal: tgt_mask must be the causal mask; memory_key_padding_mask pads at row ends;
    memory_mask and tgt_key_padding_mask are not supported (an error)."""
    native_class = _native.TransformerDecoderLayer

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None):
        x, mem = self.batch_major(tgt, "tgt"), self.batch_major(memory, "memory")
        if not is_causal(tgt_mask, x.shape[1], "TransformerDecoderLayer: 'tgt_mask'"):
            raise ValueError("TransformerDecoderLayer: attn's decoder self-attention is causal; pass the causal "
                             "tgt_mask (torch.nn.Transformer.generate_square_subsequent_mask(T))")
        if memory_mask is not None or tgt_key_padding_mask is not None:
            raise ValueError("TransformerDecoderLayer: memory_mask and tgt_key_padding_mask are not supported")
        lengths = None if memory_key_padding_mask is None else padding_lengths(
            memory_key_padding_mask, mem.shape[0], mem.shape[1], "TransformerDecoderLayer: 'memory_key_padding_mask'")
        out = self.native.forward(x, mem, lengths)
        return out if self.batch_first else _attn.transpose_01(out)
