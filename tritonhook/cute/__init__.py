"""CuTe DSL (nvidia-cutlass-dsl) support: the one place in tritonhook that knows the DSL's internals.

* `capture`: compiled functions and dump directories into the capture store.

The name swap of the ptxas name experiment (a compiled function made to launch a cubin an external ptxas built) is
lab support: tests/cute_name_swap.py, beside its tests and benchmarks/sm120_name_ab.py.

The module does not import the DSL at import time (it takes seconds); the DSL is imported where a function needs it.
"""
