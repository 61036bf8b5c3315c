"""The eager decode step compiled by torch.compile with mode="reduce-overhead".

Inductor fuses each layer's elementwise work (RMSNorm, RoPE, SiLU * up, residual adds, the
cache concats) into a few Triton kernels around the matmuls, and "reduce-overhead" records the
whole step as a CUDA graph, so one replay launches every kernel without Python in between. On a
GPU the eager seed is bound by ~50 launches per layer; this one is bound by its kernels, plus a
cost eager does not pay: CUDA graphs read fixed addresses, so every input that is not a static
parameter (here all of them, weights included: they arrive as fresh tensors every call) is
copied into the graph's input buffers first, about one extra read and write of the weights.

On the CPU there is no CUDA graph: Inductor says "skipping cudagraphs" and runs its C++ kernels,
so the seed passes there too (slowly to compile, ~10 s per new shape on 2 cores).

dynamic=False specializes every shape (layers, dims, kv_len): one compile per shape, the fastest
code for each. The task has more shapes than Dynamo's default recompile limit (8), after which it
would silently fall back to eager, so the limit is raised for this function's calls only
(config.patch is a context manager, restored on exit). Outputs are cloned: a CUDA graph's
outputs live in its memory pool and the next replay overwrites them.
"""

import torch
import torch.nn.functional as F

FAMILY = "compiled"
EPS = 1e-5  # the task's eps (task.toml)
THETA = 10000.0  # the task's rope_theta (task.toml)
RECOMPILE_LIMIT = 64


def _rmsnorm(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    hf = h.float()
    hf = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + EPS)
    return w * hf.to(h.dtype)


def _rotate_half(t: torch.Tensor) -> torch.Tensor:
    half = t.shape[-1] // 2
    return torch.cat([-t[..., half:], t[..., :half]], dim=-1)


def _step(
    x, pos, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down, final_norm, lm_head,
    k_cache, v_cache,
):  # fmt: skip
    n_layers, n_kv, _, hd = k_cache.shape
    n_heads = wq.shape[1] // hd
    dtype = x.dtype
    inv_freq = 1.0 / THETA ** (torch.arange(0, hd, 2, device=x.device, dtype=torch.float32) / hd)
    freqs = pos.float()[:, None] * inv_freq
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
    h = x[None]
    new_k, new_v = [], []
    for layer in range(n_layers):
        a = _rmsnorm(h, attn_norm[layer])
        q = (a @ wq[layer].T).view(n_heads, 1, hd)
        k = (a @ wk[layer].T).view(n_kv, 1, hd)
        v = (a @ wv[layer].T).view(n_kv, 1, hd)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        keys = torch.cat([k_cache[layer], k], dim=1)
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


_compiled = torch.compile(_step, mode="reduce-overhead", dynamic=False)


def kernel(*inputs):
    with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT):
        logits, k_new, v_new = _compiled(*inputs)
    return logits.clone(), k_new.clone(), v_new.clone()
