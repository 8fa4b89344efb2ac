"""Attention rollout and attention flow (Abnar & Zuidema 2020) on a small random transformer-cls
model, against an independent computation: the per-layer self-attention of torch's
TransformerEncoder with attn's weights copied in (learned positions, pre-LN and post-LN, a
padded batch), then rollout in numpy and flow by an Edmonds-Karp maximum flow written here
(attn uses Dinic's algorithm) on the layered graph, and by networkx's where it is installed
(Debian's python3 here has no networkx)."""
import collections
import json

import numpy as np
import pytest
import torch

import attn
from parity import assert_close

D, H, FFN, LAYERS = 8, 2, 16, 3
IDS = [[3, 9, 4, 12, 7], [5, 2, 11, 0, 0]]
LENGTHS = [5, 3]


def build(norm_first):
    cfg = {"src_vocab": 16, "classes": 2, "d_model": D, "heads": H, "ffn": FFN, "encoder_layers": LAYERS,
           "dropout": 0.0, "norm_first": norm_first, "positions": "learned", "max_len": 8, "seed": 5}
    model = attn.models.TransformerClassifier(json.dumps(cfg))
    model.eval()
    p = {k: torch.tensor(v.numpy()) for k, v in model.named_parameters()}
    layer = torch.nn.TransformerEncoderLayer(D, H, dim_feedforward=FFN, dropout=0.0, batch_first=True,
                                             norm_first=norm_first)
    encoder = torch.nn.TransformerEncoder(layer, LAYERS, norm=torch.nn.LayerNorm(D) if norm_first else None,
                                          enable_nested_tensor=False)
    with torch.no_grad():
        for name, value in encoder.named_parameters():
            value.copy_(p["encoder." + name])
    encoder.eval()
    return model, encoder, p


def torch_self_attention(encoder, p, norm_first):
    """Per layer (B, H, N, N): each layer's attention over its own input, then the layer."""
    ids = torch.tensor(IDS)
    B, S = ids.shape
    x = torch.cat([p["cls"].expand(B, 1, D), p["embedding.weight"][ids] * D ** 0.5], 1)
    x = x + p["positions.weight"][: S + 1]
    pad = torch.tensor(np.arange(S + 1)[None, :] >= np.array(LENGTHS)[:, None] + 1)  # True = ignore
    weights = []
    with torch.no_grad():
        for layer in encoder.layers:
            y = layer.norm1(x) if norm_first else x
            weights.append(layer.self_attn(y, y, y, key_padding_mask=pad, need_weights=True,
                                           average_attn_weights=False)[1])
            x = layer(x, src_key_padding_mask=pad)
    return [w.numpy().astype(np.float64) for w in weights]


def reference_residual(layers):  # per layer (H, N, N) -> Ã (N, N)
    out = []
    for a in layers:
        m = 0.5 * a.mean(0) + 0.5 * np.eye(a.shape[1])
        out.append(m / m.sum(1, keepdims=True))
    return out


def reference_rollout(layers):
    r = None
    for m in reference_residual(layers):
        r = m if r is None else m @ r
    return r


def edmonds_karp(capacity, source, sink):
    """Maximum flow value; capacity: {u: {v: c}} (copied). Shortest augmenting paths by BFS."""
    residual = collections.defaultdict(dict)
    for u, edges in capacity.items():
        for v, c in edges.items():
            residual[u][v] = residual[u].get(v, 0.0) + c
            residual[v].setdefault(u, 0.0)
    total = 0.0
    while True:
        parent, queue = {source: None}, collections.deque([source])
        while queue and sink not in parent:
            u = queue.popleft()
            for v, c in residual[u].items():
                if c > 1e-15 and v not in parent:
                    parent[v] = u
                    queue.append(v)
        if sink not in parent:
            return total
        path, v = [], sink
        while parent[v] is not None:
            path.append((parent[v], v))
            v = parent[v]
        pushed = min(residual[u][v] for u, v in path)
        for u, v in path:
            residual[u][v] -= pushed
            residual[v][u] += pushed
        total += pushed


def layered_graph(layers):
    mats = reference_residual(layers)
    N = mats[0].shape[0]
    graph = collections.defaultdict(dict)
    for l, m in enumerate(mats, start=1):
        for i in range(N):
            for j in range(N):
                graph[(l - 1, j)][(l, i)] = m[i, j]
    return graph, N, len(mats)


def reference_flow(layers, max_flow=edmonds_karp):
    graph, N, L = layered_graph(layers)
    f = np.array([[max_flow(graph, (0, j), (L, i)) for j in range(N)] for i in range(N)])
    return f / f.sum(1, keepdims=True)


def networkx_max_flow(graph, source, sink):
    import networkx as nx
    g = nx.DiGraph()
    for u, edges in graph.items():
        for v, c in edges.items():
            g.add_edge(u, v, capacity=c)
    return nx.maximum_flow_value(g, source, sink)


def test_reference_flow_by_hand():
    # rollout.h's hand example (tests/explain/rollout_test.cpp): flow rows [.5 .5] and [.3 .7].
    layers = [np.array([[[1, 0], [.5, .5]], [[.5, .5], [0, 1]]]), np.array([[[0, 1], [1, 0]], [[0, 1], [0, 1]]])]
    np.testing.assert_allclose(reference_flow(layers), [[.5, .5], [.3, .7]], atol=1e-12)


@pytest.mark.parametrize("norm_first", [True, False])
def test_rollout_and_flow_match_torch_and_networkx(norm_first):
    model, encoder, p = build(norm_first)
    ref_layers = torch_self_attention(encoder, p, norm_first)
    got_layers = model.self_attention(attn.tensor(np.array(IDS, dtype=np.int32)),
                                      attn.tensor(np.array(LENGTHS, dtype=np.int32)))
    case = f"norm_first={norm_first}"
    for l in range(LAYERS):
        assert_close("explain", case, f"self-attention layer {l}", got_layers[l], ref_layers[l])
    for b, length in enumerate(LENGTHS):
        n = length + 1  # [CLS] + tokens
        mine = attn.explain.sentence_layers(got_layers, b, n)
        theirs = [w[b, :, :n, :n] for w in ref_layers]
        assert_close("explain", f"{case} row {b}", "rollout", attn.explain.attention_rollout(mine),
                     reference_rollout(theirs))
        flow = attn.explain.attention_flow(mine, list(range(n)))
        assert_close("explain", f"{case} row {b}", "flow", flow, reference_flow(theirs))
        try:
            import networkx  # noqa: F401
        except ImportError:
            continue
        assert_close("explain", f"{case} row {b}", "flow (networkx)", flow, reference_flow(theirs, networkx_max_flow))


def test_rollout_errors():
    with pytest.raises(ValueError, match="attention_flow: row 3 outside"):
        attn.explain.attention_flow([attn.tensor(np.full((1, 3, 3), 1 / 3, dtype=np.float32))], [3])
