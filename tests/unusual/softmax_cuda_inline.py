"""Unusual but correct (GPU only): softmax as a CUDA kernel that
torch.utils.cpp_extension.load_inline builds with nvcc at import, inside the candidate's sandbox
(the backend DESIGN.md names). One block per row, three passes over it; each thread sums its
terms in double (a float32 sum one term after another loses a dominant row's small terms, see
softmax_transposed.py). Written for correctness, not speed."""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__device__ float block_max(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = red[0];
  for (int i = 1; i < (int)(blockDim.x >> 5); ++i) v = fmaxf(v, red[i]);
  __syncthreads();
  return v;
}

__device__ double block_sum(double v, double* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = red[0];
  for (int i = 1; i < (int)(blockDim.x >> 5); ++i) v += red[i];
  __syncthreads();
  return v;
}

__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
  __shared__ float fred[32];
  __shared__ double dred[32];
  const float* a = x + (int64_t)blockIdx.x * cols;
  float* b = y + (int64_t)blockIdx.x * cols;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, a[c]);
  m = block_max(m, fred);
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += (double)expf(a[c] - m);
  const float inv = (float)(1.0 / block_sum(s, dred));
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) b[c] = expf(a[c] - m) * inv;
}

torch::Tensor softmax_rows(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2, "a 2-D CUDA tensor");
  auto xf = x.contiguous().to(torch::kFloat32);
  auto y = torch::empty_like(xf);
  const int64_t rows = xf.size(0), cols = xf.size(1);
  if (rows > 0 && cols > 0) {
    softmax_rows_kernel<<<(unsigned)rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xf.data_ptr<float>(), y.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return y.to(x.scalar_type());
}
"""

_ext = load_inline(
    "cockpit_softmax_cuda_rows",
    cpp_sources="torch::Tensor softmax_rows(torch::Tensor x);",
    cuda_sources=_CUDA,
    functions=["softmax_rows"],
    extra_cuda_cflags=["-O3"],
)


def kernel(x: torch.Tensor) -> torch.Tensor:
    return _ext.softmax_rows(x)
