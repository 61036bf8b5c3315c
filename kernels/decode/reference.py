"""Decode reference: one step of a small Llama-style transformer, trusted and clear.

Only ever imported by the judge process. The judge calls `reference` with float64 copies of the
floating-point inputs (integer inputs stay int64; see cockpit/harness/verify.py), so everything
below runs in float64 there. Called with float32 or bfloat16 tensors (the meta-device shape probe,
the `cockpit baseline` wrapper) it computes in float32 and returns the model's dtype, which is
what a candidate must return too.

The model (batch 1, one new token, the cache holds the `kv_len` tokens before it):

    h = x
    for each layer l:
        a = rmsnorm(h) * attn_norm[l]
        q = wq[l] @ a  -> heads x head_dim      k = wk[l] @ a, v = wv[l] @ a -> kv_heads x head_dim
        q, k = rope(q, pos), rope(k, pos)
        K = [k_cache[l]; k], V = [v_cache[l]; v]              (kv_len + 1 keys per kv head)
        head i attends with kv head i // (heads // kv_heads)  (grouped-query attention)
        o = softmax(q . K^T / sqrt(head_dim)) @ V
        h = h + wo[l] @ o
        m = rmsnorm(h) * mlp_norm[l]
        h = h + w_down[l] @ (silu(w_gate[l] @ m) * (w_up[l] @ m))
    logits = lm_head @ (rmsnorm(h) * final_norm)
    returns (logits, k rows of every layer, v rows of every layer)

rmsnorm(v) = v / sqrt(mean(v^2) + EPS). rope is the Hugging Face Llama form ("rotate half"):
with half = head_dim / 2, inv_freq[i] = THETA ** (-2i / head_dim) for i < half, angle = pos *
inv_freq, cos/sin repeated twice along head_dim, rope(t) = t * cos + rotate_half(t) * sin where
rotate_half(t) = [-t[half:], t[:half]]. The cached keys are already rotated.
"""

import math

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
EPS = 1e-5  # RMSNorm epsilon; must equal `eps` in task.toml (tests/test_decode_task.py checks it)
THETA = 10000.0  # RoPE base; must equal `rope_theta` in task.toml
POS_SPAN = 256  # pos is kv_len + U{0 .. POS_SPAN-1}: the cache is the window just before it

INPUTS = (
    "x",
    "pos",
    "attn_norm",
    "wq",
    "wk",
    "wv",
    "wo",
    "mlp_norm",
    "w_gate",
    "w_up",
    "w_down",
    "final_norm",
    "lm_head",
    "k_cache",
    "v_cache",
)


def config(shape: dict) -> dict:
    """The model's sizes from a shape (task.toml keys), with head_dim derived and checked."""
    c = {k: int(shape[k]) for k in ("layers", "dim", "heads", "kv_heads", "ffn", "vocab")}
    c["kv_len"] = int(shape["kv_len"])
    if c["dim"] % c["heads"] or c["heads"] % c["kv_heads"]:
        raise ValueError(f"dim % heads and heads % kv_heads must be 0: {shape}")
    c["head_dim"] = c["dim"] // c["heads"]
    if c["head_dim"] % 2:
        raise ValueError(f"head_dim = dim / heads must be even for RoPE: {shape}")
    return c


def param_count(shape: dict) -> int:
    """Weights read by one step (the roofline's bytes, task.toml, counts the same)."""
    c = config(shape)
    d, hd = c["dim"], c["head_dim"]
    per_layer = 2 * d + 2 * d * c["heads"] * hd + 2 * d * c["kv_heads"] * hd + 3 * d * c["ffn"]
    return c["layers"] * per_layer + d + c["vocab"] * d


def make_inputs(shape: dict, seed: int, device: str) -> tuple[torch.Tensor, ...]:
    """Random weights of a sane model: activations stay O(1) through every layer.

    Linear weights are N(0, 1/fan_in) (unit-variance outputs from unit-RMS inputs); norm weights
    are 1 + N(0, 0.2), with a few near zero; x (the new token's embedding) and the cache are
    N(0, 1) and keys get a per-(layer, kv head) scale in [0.5, 2.5] so some heads attend sharply
    and some almost uniformly. pos is an int64 tensor of one element, kv_len or a little more
    (the cache is the window of kv_len tokens before the new one; a kernel must read pos, not
    assume pos == kv_len). Generated from one generator on `device`, in a fixed order: the same
    (shape, seed, device kind) gives the same tensors.
    """
    c = config(shape)
    dtype = DTYPES[shape.get("dtype", "float32")]
    L, D, F, V = c["layers"], c["dim"], c["ffn"], c["vocab"]
    H, KVH, HD, T = c["heads"], c["kv_heads"], c["head_dim"], c["kv_len"]
    g = torch.Generator(device=device).manual_seed(seed)

    def normal(*size: int, std: float = 1.0) -> torch.Tensor:
        t = torch.randn(*size, generator=g, device=device, dtype=torch.float32)
        return t.mul_(std) if std != 1.0 else t

    def linear(out_f: int, in_f: int) -> torch.Tensor:
        return normal(L, out_f, in_f, std=in_f**-0.5).to(dtype)

    def norm_weight(*size: int) -> torch.Tensor:
        return (1 + normal(*size, std=0.2)).to(dtype)

    x = normal(D).to(dtype)
    off = torch.randint(0, POS_SPAN, (1,), generator=g, device=device)
    pos = (off + T).to(torch.int64)
    attn_norm = norm_weight(L, D)
    wq, wk, wv = linear(H * HD, D), linear(KVH * HD, D), linear(KVH * HD, D)
    wo = linear(D, H * HD)
    mlp_norm = norm_weight(L, D)
    w_gate, w_up = linear(F, D), linear(F, D)
    w_down = linear(D, F)
    final_norm = norm_weight(D)
    lm_head = normal(V, D, std=D**-0.5).to(dtype)
    k_scale = 0.5 + 2 * torch.rand(L, KVH, 1, 1, generator=g, device=device)
    k_cache = (normal(L, KVH, T, HD) * k_scale).to(dtype)
    v_cache = normal(L, KVH, T, HD).to(dtype)
    return (
        x,
        pos,
        attn_norm,
        wq,
        wk,
        wv,
        wo,
        mlp_norm,
        w_gate,
        w_up,
        w_down,
        final_norm,
        lm_head,
        k_cache,
        v_cache,
    )


def _rmsnorm(v: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return v * torch.rsqrt(v.pow(2).mean(dim=-1, keepdim=True) + EPS) * w


def _rope(t: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = t.shape[-1] // 2
    rotated = torch.cat([-t[..., half:], t[..., :half]], dim=-1)
    return t * cos + rotated * sin


def reference(
    x: torch.Tensor,
    pos: torch.Tensor,
    attn_norm: torch.Tensor,
    wq: torch.Tensor,
    wk: torch.Tensor,
    wv: torch.Tensor,
    wo: torch.Tensor,
    mlp_norm: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    final_norm: torch.Tensor,
    lm_head: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logits [vocab], k_new [layers, kv_heads, head_dim], v_new [same]) in x's dtype."""
    acc = torch.promote_types(x.dtype, torch.float32)
    L, KVH, _, HD = k_cache.shape
    H = wq.shape[1] // HD
    group = H // KVH
    half = HD // 2
    inv_freq = THETA ** (-torch.arange(half, device=x.device, dtype=acc) * 2 / HD)
    angle = pos.to(acc).reshape(1) * inv_freq
    cos = torch.cat([angle.cos(), angle.cos()])
    sin = torch.cat([angle.sin(), angle.sin()])
    h = x.to(acc)
    ks, vs = [], []
    for layer in range(L):
        a = _rmsnorm(h, attn_norm[layer].to(acc))
        q = _rope((wq[layer].to(acc) @ a).reshape(H, HD), cos, sin)
        k = _rope((wk[layer].to(acc) @ a).reshape(KVH, HD), cos, sin)
        v = (wv[layer].to(acc) @ a).reshape(KVH, HD)
        keys = torch.cat([k_cache[layer].to(acc), k[:, None]], dim=1)  # [KVH, T + 1, HD]
        vals = torch.cat([v_cache[layer].to(acc), v[:, None]], dim=1)
        keys = keys.repeat_interleave(group, dim=0)  # kv head j serves heads j*group ..
        vals = vals.repeat_interleave(group, dim=0)
        scores = (keys @ q[:, :, None])[..., 0] / math.sqrt(HD)  # [H, T + 1]
        o = (torch.softmax(scores, dim=-1)[:, None, :] @ vals)[:, 0]  # [H, HD]
        h = h + wo[layer].to(acc) @ o.reshape(H * HD)
        m = _rmsnorm(h, mlp_norm[layer].to(acc))
        gate = torch.nn.functional.silu(w_gate[layer].to(acc) @ m)
        h = h + w_down[layer].to(acc) @ (gate * (w_up[layer].to(acc) @ m))
        ks.append(k)
        vs.append(v)
    logits = lm_head.to(acc) @ _rmsnorm(h, final_norm.to(acc))
    return (
        logits.to(x.dtype),
        torch.stack(ks).to(x.dtype),
        torch.stack(vs).to(x.dtype),
    )
