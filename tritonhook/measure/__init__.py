"""Measuring kernels against each other: what `ab/` and `sweep/` both time and judge with, so that neither feature
is the other's library.

`timing` (the one GPU timer: CUDA events, L2 rotation of inputs, the stream hold, the empty kernel after a timed
call), `stats` (pure statistics: round medians, the ratio interval, the verdict), `outputs` (the output check:
bitwise, within the baseline's spread, close or differ), `variants` (which kernel name each arm compiles with).
It imports no feature.
"""
