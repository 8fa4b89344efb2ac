"""attn.train optimizers (SGD with momentum / dampening / nesterov / weight_decay, Adam, AdamW)
vs torch.optim over 3 steps with identical gradients; clip_grad_norm vs
torch.nn.utils.clip_grad_norm_; the LR schedule vs its documented formulas."""
import math

import numpy as np
import pytest
import torch

import attn
from parity import assert_close, randn, to_attn, to_torch

SHAPES = [(3, 4), (5,), (1,)]


def set_grads_attn(params, grads):
    """Gradients arrive through backward: loss = Σ_i Σ p_i ⊙ g_i gives dp_i = g_i."""
    loss = None
    for p, g in zip(params, grads):
        if g is None:
            continue
        term = attn.sum(attn.mul(p, to_attn(g)))
        loss = term if loss is None else attn.add(loss, term)
    attn.backward(loss)


def run_both(attn_cls, torch_cls, attn_kw, torch_kw, steps=3, new_lr=None):
    init = [randn(1 + i, *s) for i, s in enumerate(SHAPES)]
    pa = [to_attn(x, True) for x in init]
    pt = [to_torch(x, True) for x in init]
    oa, ot = attn_cls(pa, **attn_kw), torch_cls(pt, **torch_kw)
    for step in range(steps):
        # The last parameter never gets a gradient: neither side may move it.
        grads = [randn(100 + 10 * step + i, *s) for i, s in enumerate(SHAPES[:-1])] + [None]
        if new_lr is not None and step == steps - 1:
            oa.lr = new_lr
            for group in ot.param_groups:
                group["lr"] = new_lr
        oa.zero_grad()
        set_grads_attn(pa, grads)
        ot.zero_grad()
        for p, g in zip(pt, grads):
            p.grad = None if g is None else torch.tensor(g)
        oa.step()
        ot.step()
        case = f"{attn_cls.__name__} {attn_kw} step={step + 1}"
        for i, (a, t) in enumerate(zip(pa, pt)):
            assert_close("optim", case, f"param {i} {SHAPES[i]}", a, t)
    assert oa.step_count == steps
    assert np.array_equal(pa[-1].numpy(), init[-1])


@pytest.mark.parametrize("kw", [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, dampening=0.3),
                                dict(lr=0.1, momentum=0.9, nesterov=True), dict(lr=0.1, weight_decay=0.05),
                                dict(lr=0.05, momentum=0.5, weight_decay=0.1, nesterov=True)])
def test_sgd(kw):
    run_both(attn.train.SGD, torch.optim.SGD, kw, kw)


@pytest.mark.parametrize("kw", [dict(), dict(lr=1e-2), dict(lr=1e-2, weight_decay=0.1),
                                dict(lr=3e-3, beta1=0.8, beta2=0.99, eps=1e-6)])
@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_adam(kw, cls):
    tkw = dict(kw)
    if "beta1" in tkw:
        tkw["betas"] = (tkw.pop("beta1"), tkw.pop("beta2"))
    if cls == "AdamW" and "weight_decay" not in kw:
        tkw["weight_decay"] = 1e-2  # attn's AdamW default equals torch's
    run_both(getattr(attn.train, cls), getattr(torch.optim, cls), kw, tkw)


def test_lr_change_between_steps():
    run_both(attn.train.Adam, torch.optim.Adam, dict(lr=1e-2), dict(lr=1e-2), new_lr=0.05)
    run_both(attn.train.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9), new_lr=0.01)


@pytest.mark.parametrize("max_norm", [0.1, 1.0, 1e3])
@pytest.mark.parametrize("grad_scale", [1.0, 100.0])
def test_clip_grad_norm(max_norm, grad_scale):
    init = [randn(1 + i, *s) for i, s in enumerate(SHAPES)]
    grads = [randn(10 + i, *s, scale=grad_scale) for i, s in enumerate(SHAPES[:-1])] + [None]
    pa = [to_attn(x, True) for x in init]
    pt = [to_torch(x, True) for x in init]
    set_grads_attn(pa, grads)
    for p, g in zip(pt, grads):
        p.grad = None if g is None else torch.tensor(g)
    norm_a = attn.train.clip_grad_norm(pa, max_norm)
    norm_t = torch.nn.utils.clip_grad_norm_(pt, max_norm)
    case = f"max_norm={max_norm} grad_scale={grad_scale}"
    assert_close("optim", case, "total norm", np.float32(norm_a), norm_t)
    for i, (a, t) in enumerate(zip(pa[:-1], pt[:-1])):
        assert_close("optim", case, f"grad {i}", a.grad, t.grad)
    assert pa[-1].grad is None


def test_optimizer_errors():
    with pytest.raises(attn.ValueError):
        attn.train.SGD([], lr=0.1)
    with pytest.raises(attn.ValueError):
        attn.train.SGD([to_attn(randn(1, 2), True)], lr=float("nan"))


def reference_lr(kind, base, w, total, min_lr, step):
    s = step + 1
    if w > 0 and s <= w:
        return base * s / w
    if kind == "constant":
        return base
    if kind == "linear_warmup_decay":
        if s >= total:
            return min_lr
        return base + (min_lr - base) * (s - w) / (total - w)
    if kind == "cosine":
        p = min(max((s - w) / (total - w), 0.0), 1.0)
        return min_lr + (base - min_lr) * 0.5 * (1 + math.cos(math.pi * p))
    return max(min_lr, base * math.sqrt(max(w, 1) / s))


@pytest.mark.parametrize("kind", ["constant", "linear_warmup_decay", "cosine", "inverse_sqrt"])
@pytest.mark.parametrize("warmup", [0, 4])
def test_lr_schedule(kind, warmup):
    total, base, min_lr = 20, 1e-2, 1e-4
    sched = attn.train.LrSchedule(kind, base_lr=base, warmup_steps=warmup, total_steps=total, min_lr=min_lr)
    for step in range(0, 25):
        expected = reference_lr(kind, base, warmup, total, min_lr, step)
        got = sched.lr_at(step)
        assert abs(got - expected) <= 1e-6 * base, f"LrSchedule {kind} warmup={warmup} step={step}: {got} vs {expected}"
