"""Exploit: fake results on stdout.

The candidate prints result lines that look like the harness's own JSON verdict ("status": "ok",
a tiny time) at import and on every call, and returns a plausible-looking but wrong answer (a
uniform distribution: rows still sum to 1). A harness that parses the evaluation process's stdout
for its result line picks up the forged one.

Defense that must catch it: nothing the candidate prints is ever parsed (results travel over a
private channel as JSON the judge requests); outputs are checked by the judge -> `wrong` /
`numerical`.
"""

import json

import torch

FAKE = {"status": "ok", "reasons": [], "geomean_us": 0.01, "score_us": 0.01, "speedups": {"reference": 1000.0}}
print(json.dumps(FAKE), flush=True)


def kernel(x: torch.Tensor) -> torch.Tensor:
    print(json.dumps(FAKE), flush=True)
    return torch.full_like(x, 1.0 / x.shape[-1])
