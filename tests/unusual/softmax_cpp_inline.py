"""Unusual but correct: softmax as C++ compiled at import through
torch.utils.cpp_extension.load_inline, the backend DESIGN.md allows for CUDA, here in its CPU
form so the CPU tests can build it. The build runs inside the arena's sandbox: ninja and the C++
compiler as subprocesses of torch, under the Landlock rules, with HOME (where the build goes) in
the arena's workdir. Sums in double: a float32 sum one term after another would lose a
dominant row's small terms (see softmax_transposed.py)."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <cmath>
torch::Tensor softmax_rows(torch::Tensor x) {
  auto xf = x.contiguous().to(torch::kFloat32);
  auto y = torch::empty_like(xf);
  const int64_t rows = xf.size(0), cols = xf.size(1);
  const float* in = xf.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = in + r * cols;
    float* b = out + r * cols;
    float m = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) m = a[c] > m ? a[c] : m;
    double s = 0.0;
    for (int64_t c = 0; c < cols; ++c) { b[c] = std::exp(a[c] - m); s += b[c]; }
    const float inv = (float)(1.0 / s);
    for (int64_t c = 0; c < cols; ++c) b[c] *= inv;
  }
  return y.to(x.scalar_type());
}
"""

_ext = load_inline("cockpit_softmax_rows", cpp_sources=_SRC, functions=["softmax_rows"])


def kernel(x: torch.Tensor) -> torch.Tensor:
    return _ext.softmax_rows(x)
