"""The evaluation harness (docs/harness-protocol.md): importable with torch, triton and numpy alone.

This file imports nothing, so the command line can name the defaults without loading torch."""

# How tensors cross between the judge and the arena (`wire.exchange`). memfd by default: a
# transfer through it is several times faster than through files (bench/exchange.py; the figures
# are in docs/decisions/0012-memfd-exchange.md and BENCHMARKS.md, "Today's figures").
DEFAULT_EXCHANGE = "memfd"
EXCHANGES = ("memfd", "files")
