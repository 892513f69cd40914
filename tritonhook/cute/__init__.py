"""CuTe DSL (nvidia-cutlass-dsl) support: the one place in tritonhook that knows the DSL's internals.

* `capture`: compiled functions and dump directories into the capture store.
* `name_swap`: make a compiled function launch a cubin an external ptxas built, optionally under a name without
  `cutlass` (the ptxas name effect, docs/notes.md §1.1).

Neither module imports the DSL at import time (it takes seconds); the DSL is imported where a function needs it.
"""
