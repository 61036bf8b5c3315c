"""The evaluation harness (docs/harness-protocol.md): importable with torch, triton and numpy alone.

This file imports nothing, so the command line can name the defaults without loading torch."""

# How tensors cross between the judge and the arena (`wire.exchange`). memfd since session 6: on
# the H200 a transfer ran 8.0-8.5x faster than through files (5.0 vs 0.59 GB/s at 671 MB,
# bench/exchange.py) and the timing stage of a quick QR shard took 9.0 s instead of 26.6 s
# (BENCHMARKS.md, "H200 — session 6").
DEFAULT_EXCHANGE = "memfd"
EXCHANGES = ("memfd", "files")
