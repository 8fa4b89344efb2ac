"""attn.explain's importance measures against an independent PyTorch computation of the same
bilstm-attn model (weights copied in): the logits and attention, gradient x input with the
attention detached (Jain & Wallace), leave-one-out, and integrated gradients (zero baseline,
right Riemann sum)."""
import json

import numpy as np
import pytest
import torch

import attn
from parity import assert_close

VARIANTS = [("lstm", "additive"), ("lstm", "dot"), ("average", "additive"), ("average", "dot")]
IDS = [3, 9, 4, 12, 7, 2]


class TorchAttnClassifier(torch.nn.Module):
    """The reference: embeddings -> BiLSTM (or tanh projection) -> attention pooling -> linear."""

    def __init__(self, cfg, params):
        super().__init__()
        self.cfg = cfg
        p = {k: torch.tensor(v.numpy()) for k, v in params}
        self.embedding = p["embedding.weight"]
        if cfg["encoder"] == "lstm":
            self.rnn = torch.nn.LSTM(cfg["emb"], cfg["hidden"], num_layers=cfg["layers"], bidirectional=True,
                                     batch_first=True)
            with torch.no_grad():
                for name, value in self.rnn.named_parameters():
                    value.copy_(p["rnn." + name])
        else:
            self.proj_w, self.proj_b = p["projection.weight"], p["projection.bias"]
        self.p = p

    def encode(self, e):  # (B, n, emb) -> (B, n, E)
        if self.cfg["encoder"] == "lstm":
            return self.rnn(e)[0]
        return torch.tanh(e @ self.proj_w.T + self.proj_b)

    def weights(self, h):  # (B, n, E) -> (B, n)
        if self.cfg["pooling"] == "additive":
            scores = torch.tanh(h @ self.p["pooling.w"].T + self.p["pooling.bias"]) @ self.p["pooling.v"]
        else:
            scores = h @ self.p["pooling.query"]
        return torch.softmax(scores, dim=1)

    def probabilities(self, e, detach_attention=False):
        h = self.encode(e)
        a = self.weights(h)
        if detach_attention:
            a = a.detach()
        context = (a.unsqueeze(2) * h).sum(1)
        return torch.softmax(context @ self.p["out.weight"].T + self.p["out.bias"], dim=1), a

    def embed(self, ids):
        return self.embedding[torch.tensor(ids)].unsqueeze(0)


def build(encoder, pooling):
    cfg = {"vocab": 20, "emb": 6, "hidden": 4, "layers": 1, "attention": 5, "dropout": 0.0, "classes": 2,
           "encoder": encoder, "pooling": pooling, "seed": 13}
    model = attn.models.AttnClassifier(json.dumps(cfg))
    return model, TorchAttnClassifier(cfg, model.named_parameters())


@pytest.mark.parametrize("encoder,pooling", VARIANTS)
def test_logits_and_attention(encoder, pooling):
    model, ref = build(encoder, pooling)
    model.eval()
    logits, attention = model.logits(attn.tensor(np.array([IDS], dtype=np.int32)), attn.tensor(np.array([6], dtype=np.int32)))
    p, a = ref.probabilities(ref.embed(IDS))
    assert_close("explain", f"{encoder}/{pooling}", "attention", attention, a)
    assert_close("explain", f"{encoder}/{pooling}", "probabilities", torch.softmax(torch.tensor(logits.numpy()), 1), p)


@pytest.mark.parametrize("encoder,pooling", VARIANTS)
@pytest.mark.parametrize("label", [0, 1])
def test_gradient_times_input(encoder, pooling, label):
    model, ref = build(encoder, pooling)
    e = ref.embed(IDS).clone().requires_grad_(True)
    p, _ = ref.probabilities(e, detach_attention=True)
    p[0, label].backward()
    expected = (e.grad * e).sum(2)[0]
    assert_close("explain", f"{encoder}/{pooling}", "gradient x input", np.array(attn.explain.gradient_times_input(model, IDS, label)), expected)


@pytest.mark.parametrize("encoder,pooling", VARIANTS)
def test_integrated_gradients(encoder, pooling):
    model, ref = build(encoder, pooling)
    label, steps = 1, 50
    e = ref.embed(IDS).detach()
    total = torch.zeros_like(e)
    for k in range(1, steps + 1):
        x = (e * k / steps).clone().requires_grad_(True)
        p, _ = ref.probabilities(x)
        p[0, label].backward()
        total += x.grad
    expected = (e * total / steps).sum(2)[0]
    attributions, completeness_error, baseline = attn.explain.integrated_gradients(model, IDS, label, steps)
    assert_close("explain", f"{encoder}/{pooling}", "integrated gradients", np.array(attributions), expected)
    p_input, _ = ref.probabilities(e)
    p_zero, _ = ref.probabilities(torch.zeros_like(e))
    assert abs(baseline - p_zero[0, label].item()) < 1e-5
    expected_error = abs(expected.sum().item() - (p_input[0, label] - p_zero[0, label]).item())
    assert abs(completeness_error - expected_error) < 1e-5


@pytest.mark.parametrize("encoder,pooling", VARIANTS)
def test_leave_one_out(encoder, pooling):
    model, ref = build(encoder, pooling)
    label = 0
    with torch.no_grad():
        full = ref.probabilities(ref.embed(IDS))[0][0, label]
        expected = [abs(full - ref.probabilities(ref.embed(IDS[:s] + IDS[s + 1:]))[0][0, label]).item()
                    for s in range(len(IDS))]
    assert_close("explain", f"{encoder}/{pooling}", "leave-one-out", np.array(attn.explain.leave_one_out(model, IDS, label)), np.array(expected))


def test_kendall_tau_b_against_a_torch_free_reference():
    # scipy's documented example (scipy is not installed here).
    defined, tau, p = attn.explain.kendall_tau_b([12, 2, 1, 12, 2], [1, 4, 7, 1, 0])
    assert defined and abs(tau + 0.47140452079103173) < 1e-12 and abs(p - 0.2827454599327748) < 1e-12
    try:
        from scipy.stats import kendalltau
    except ImportError:
        return
    rng = np.random.default_rng(3)
    for n in (2, 5, 12, 40):
        x, y = rng.integers(0, 4, n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        ref = kendalltau(x, y)
        got = attn.explain.kendall_tau_b(x.tolist(), y.tolist())
        assert abs(got[1] - ref.statistic) < 1e-9 and abs(got[2] - ref.pvalue) < 1e-9


def torch_jsd(a, b):
    m = 0.5 * (a + b)
    return 0.5 * (a * (a / m).log()).sum(-1) + 0.5 * (b * (b / m).log()).sum(-1)


def test_jensen_shannon():
    rng = np.random.default_rng(5)
    for n in (2, 7, 30):
        a, b = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
        expected = torch_jsd(torch.tensor(a), torch.tensor(b)).item()
        assert abs(attn.explain.jensen_shannon(a.astype(np.float32).tolist(), b.astype(np.float32).tolist()) - expected) < 1e-6


@pytest.mark.parametrize("encoder,pooling", VARIANTS)
@pytest.mark.parametrize("epsilon", [0.0, 0.01, 1.0])
def test_adversarial_objective_and_gradient(encoder, pooling, epsilon):
    """O(z) = JSD(softmax(z), attention) - lambda * max(0, |y(softmax z) - y| - epsilon), the states
    fixed, and dO/dz by torch's autograd."""
    model, ref = build(encoder, pooling)
    K, n, lam = 4, len(IDS), 7.0
    rng = np.random.default_rng(11)
    z = rng.standard_normal((K, n)).astype(np.float32) * 2
    objective, gradient, label, original = attn.explain.adversarial_objective(model, IDS, z.ravel().tolist(), K, epsilon, lam)
    with torch.no_grad():
        h = ref.encode(ref.embed(IDS))
        alpha = ref.weights(h)[0]
        p0 = ref.probabilities(ref.embed(IDS))[0][0]
    assert label == int(p0.argmax()) and abs(original - p0[label].item()) < 1e-5
    zt = torch.tensor(z, requires_grad=True)
    a = torch.softmax(zt, dim=1)                                     # (K, n)
    context = a @ h[0]                                               # (K, E)
    y = torch.softmax(context @ ref.p["out.weight"].T + ref.p["out.bias"], dim=1)[:, label]
    o = torch_jsd(a, alpha.unsqueeze(0)) - lam * torch.clamp((y - p0[label]).abs() - epsilon, min=0)
    o.sum().backward()
    tag = f"{encoder}/{pooling} eps {epsilon}"
    assert_close("explain", tag, "adversarial objective", np.array(objective), o.detach())
    assert_close("explain", tag, "adversarial gradient", np.array(gradient).reshape(K, n), zt.grad)


def test_adversarial_attention_respects_the_bound():
    model, ref = build("lstm", "additive")
    r = attn.explain.adversarial_attention(model, IDS, 5, 200)
    with torch.no_grad():
        h = ref.encode(ref.embed(IDS))[0]
        alpha = ref.weights(h.unsqueeze(0))[0]
        p0 = ref.probabilities(ref.embed(IDS))[0][0]
        a = torch.tensor(r["attention"])
        y = torch.softmax((a @ h) @ ref.p["out.weight"].T + ref.p["out.bias"], dim=0)
    label = int(p0.argmax())
    assert abs(y[label] - p0[label]).item() <= 0.05 + 1e-6
    assert abs(torch_jsd(a, alpha).item() - r["jsd"]) < 1e-5
    assert r["jsd"] > 0.0
