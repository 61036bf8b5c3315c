"""Baseline: one decode step in eager PyTorch, written the way a Hugging Face Llama runs it.

Activations stay in the model's dtype between ops (bfloat16 or float32); RMSNorm upcasts to
float32 inside, RoPE angles are computed in float32, attention is `scaled_dot_product_attention`
with grouped-query heads. Every op is its own kernel launch: per layer about 50 (casts and
reductions of two norms, seven projections, RoPE's negations/concats/multiplies, two cache
concats, attention, SiLU, residual adds), ~210 per step at 4 layers, so on a GPU a small model
is bound by launch overhead, not by the bytes of its weights.
That gap is what the compiled seed (and any fused kernel) is measured against.

The cache is not modified: `torch.cat` builds each layer's keys and values with the new row
(a copy of the cache per layer, which a real server would avoid by writing into a preallocated
cache; the task forbids mutating inputs, so a kernel must read the cache plus the new row).
"""

import torch
import torch.nn.functional as F

FAMILY = "eager"
EPS = 1e-5  # the task's eps (task.toml)
THETA = 10000.0  # the task's rope_theta (task.toml)


def _rmsnorm(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    hf = h.float()
    hf = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + EPS)
    return w * hf.to(h.dtype)


def _rotate_half(t: torch.Tensor) -> torch.Tensor:
    half = t.shape[-1] // 2
    return torch.cat([-t[..., half:], t[..., :half]], dim=-1)


def kernel(
    x, pos, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down, final_norm, lm_head,
    k_cache, v_cache,
):  # fmt: skip
    n_layers, n_kv, _, hd = k_cache.shape
    n_heads = wq.shape[1] // hd
    dtype = x.dtype
    inv_freq = 1.0 / THETA ** (torch.arange(0, hd, 2, device=x.device, dtype=torch.float32) / hd)
    freqs = pos.float()[:, None] * inv_freq  # [1, hd/2], on the device: no host sync
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)  # [1, hd]
    h = x[None]  # [1, dim]
    new_k, new_v = [], []
    for layer in range(n_layers):
        a = _rmsnorm(h, attn_norm[layer])
        q = (a @ wq[layer].T).view(n_heads, 1, hd)
        k = (a @ wk[layer].T).view(n_kv, 1, hd)
        v = (a @ wv[layer].T).view(n_kv, 1, hd)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        keys = torch.cat([k_cache[layer], k], dim=1)  # [kv_heads, kv_len + 1, hd]
        vals = torch.cat([v_cache[layer], v], dim=1)
        o = F.scaled_dot_product_attention(q[None], keys[None], vals[None], enable_gqa=True)
        h = h + o.reshape(1, n_heads * hd) @ wo[layer].T
        m = _rmsnorm(h, mlp_norm[layer])
        h = h + (F.silu(m @ w_gate[layer].T) * (m @ w_up[layer].T)) @ w_down[layer].T
        new_k.append(k)
        new_v.append(v)
    logits = _rmsnorm(h, final_norm) @ lm_head.T
    return (
        logits.view(-1),
        torch.stack(new_k).view(n_layers, n_kv, hd),
        torch.stack(new_v).view(n_layers, n_kv, hd),
    )
