"""PROTOTYPE (session 22): a lone row over a thread-block cluster (CUDA C++ through load_inline)."""

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

template <int T>
__device__ __forceinline__ float block_reduce(float v, float* red, bool is_max) {
  #pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffff, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  if (lane == 0) red[wid] = v;
  __syncthreads();
  v = red[0];
  #pragma unroll
  for (int i = 1; i < T / 32; ++i) v = is_max ? fmaxf(v, red[i]) : v + red[i];
  __syncthreads();
  return v;
}

// MODE 0: softmax, MODE 1: rmsnorm (w, eps)
template <int C, int T, int K, int MODE>
__global__ void __cluster_dims__(C, 1, 1) lone_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                                      float* __restrict__ y, int cols, float eps) {
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int per = ((cols + C * 4 - 1) / (C * 4)) * 4;  // a multiple of 4: slices start on 16 bytes
  const int lo = rank * per;
  const int hi = min(cols, lo + per);
  __shared__ float red[32];
  __shared__ float stats[2];
  float v[K];
  float m = -INFINITY, s = 0.f;
  #pragma unroll
  for (int k = 0; k < K; ++k) {
    const int c = lo + threadIdx.x + k * T;
    v[k] = (c < hi) ? __ldg(x + c) : (MODE == 0 ? -INFINITY : 0.f);
  }
  if (MODE == 0) {
    #pragma unroll
    for (int k = 0; k < K; ++k) m = fmaxf(m, v[k]);
    m = block_reduce<T>(m, red, true);
    const float mm = (m == -INFINITY) ? 0.f : m;
    #pragma unroll
    for (int k = 0; k < K; ++k) { v[k] = __expf(v[k] - mm); s += v[k]; }
    s = block_reduce<T>(s, red, false);
    if (threadIdx.x == 0) { stats[0] = m; stats[1] = s; }
  } else {
    #pragma unroll
    for (int k = 0; k < K; ++k) s += v[k] * v[k];
    s = block_reduce<T>(s, red, false);
    if (threadIdx.x == 0) { stats[0] = 0.f; stats[1] = s; }
  }
  cluster.sync();
  float scale;
  if (MODE == 0) {
    float M = -INFINITY;
    #pragma unroll
    for (int r = 0; r < C; ++r) M = fmaxf(M, cluster.map_shared_rank(stats, r)[0]);
    float S = 0.f;
    #pragma unroll
    for (int r = 0; r < C; ++r) {
      const float* st = cluster.map_shared_rank(stats, r);
      if (st[1] > 0.f) S += st[1] * __expf(st[0] - M);
    }
    scale = (m == -INFINITY) ? 0.f : __expf(m - M) / S;
  } else {
    float S = 0.f;
    #pragma unroll
    for (int r = 0; r < C; ++r) S += cluster.map_shared_rank(stats, r)[1];
    scale = rsqrtf(S / cols + eps);
  }
  #pragma unroll
  for (int k = 0; k < K; ++k) {
    const int c = lo + threadIdx.x + k * T;
    if (c < hi) y[c] = MODE == 0 ? v[k] * scale : v[k] * scale * __ldg(w + c);
  }
  cluster.sync();  // no block exits while another may still read its shared memory
}

template <int T, int K, int MODE>
__global__ void lone_single(const float* __restrict__ x, const float* __restrict__ w,
                            float* __restrict__ y, int cols, float eps) {
  __shared__ float red[32];
  float v[K];
  float m = -INFINITY, s = 0.f;
  #pragma unroll
  for (int k = 0; k < K; ++k) {
    const int c = threadIdx.x + k * T;
    v[k] = (c < cols) ? __ldg(x + c) : (MODE == 0 ? -INFINITY : 0.f);
  }
  float scale;
  if (MODE == 0) {
    #pragma unroll
    for (int k = 0; k < K; ++k) m = fmaxf(m, v[k]);
    m = block_reduce<T>(m, red, true);
    #pragma unroll
    for (int k = 0; k < K; ++k) { v[k] = __expf(v[k] - m); s += v[k]; }
    s = block_reduce<T>(s, red, false);
    scale = 1.f / s;
  } else {
    #pragma unroll
    for (int k = 0; k < K; ++k) s += v[k] * v[k];
    s = block_reduce<T>(s, red, false);
    scale = rsqrtf(s / cols + eps);
  }
  #pragma unroll
  for (int k = 0; k < K; ++k) {
    const int c = threadIdx.x + k * T;
    if (c < cols) y[c] = MODE == 0 ? v[k] * scale : v[k] * scale * __ldg(w + c);
  }
}

template <int C, int T, int MODE>
void launch(const float* x, const float* w, float* y, int cols, float eps, cudaStream_t st) {
  if (C == 1) lone_single<T, 8, MODE><<<1, T, 0, st>>>(x, w, y, cols, eps);
  else lone_kernel<C, T, 8, MODE><<<C, T, 0, st>>>(x, w, y, cols, eps);
}

torch::Tensor lone(torch::Tensor x, torch::Tensor w, int64_t c, int64_t t, int64_t mode, double eps) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.size(0) == 1);
  const int cols = (int)x.size(1);
  TORCH_CHECK(((cols + c * 4 - 1) / (c * 4)) * 4 <= t * 8, "row too long for this cluster");
  auto y = torch::empty_like(x);
  auto st = at::cuda::getCurrentCUDAStream();
  const float* wp = mode == 1 ? w.data_ptr<float>() : nullptr;
  #define L(C_, T_) if (c == C_ && t == T_) { if (mode == 0) launch<C_, T_, 0>(x.data_ptr<float>(), wp, y.data_ptr<float>(), cols, (float)eps, st); else launch<C_, T_, 1>(x.data_ptr<float>(), wp, y.data_ptr<float>(), cols, (float)eps, st); return y; }
  L(1, 1024) L(1, 512) L(2, 1024) L(2, 256) L(2, 512) L(4, 128) L(4, 256) L(8, 64) L(8, 128)
  TORCH_CHECK(false, "no such cluster shape");
  return y;
}
"""
CPP_SRC = "torch::Tensor lone(torch::Tensor x, torch::Tensor w, int64_t c, int64_t t, int64_t mode, double eps);"


def build():
    from torch.utils.cpp_extension import load_inline
    return load_inline(
        "cockpit_lone_cluster", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["lone"],
        extra_cuda_cflags=["-O3", "-gencode=arch=compute_90,code=sm_90"], verbose=False,
    )
