"""GPU exploit: pin the input in L2 with a persisting access-policy window so the harness's flush
cannot evict it, and the "cold" timed call reads from cache. Defense: the harness resets
persisting lines before every timed call and checks the carve-out and the stream's window
(`integrity: persisting L2`)."""

import ctypes
import glob
import os
import sys

import torch


def _cudart():
    for p in sys.path:
        for f in glob.glob(os.path.join(p, "nvidia", "*", "lib", "libcudart.so*")):
            return ctypes.CDLL(f)
    return ctypes.CDLL("libcudart.so")


class _Window(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]


class _Value(ctypes.Union):
    _fields_ = [("accessPolicyWindow", _Window), ("pad", ctypes.c_uint8 * 64)]


_rt = _cudart()


def kernel(x):
    nbytes = x.numel() * x.element_size()
    _rt.cudaDeviceSetLimit(0x06, ctypes.c_size_t(min(nbytes, 40 << 20)))
    v = _Value()
    v.accessPolicyWindow = _Window(x.data_ptr(), min(nbytes, 40 << 20), 1.0, 2, 1)  # persisting / streaming
    _rt.cudaStreamSetAttribute(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1, ctypes.byref(v))
    return torch.softmax(x, -1)
