"""Everything about ptxas itself: finding and running the binaries (`binaries`: ptxas, nvdisasm, cuobjdump, their
versions and codegen options), the wrapper that records each call (`wrapper`), the same PTX assembled by every ptxas
at hand (`matrix`, `tritonhook ptxas-matrix`) and CompileIQ's space of control files (`tune_space`). Each module keeps
its own layer (tests/test_layers.py): this package only groups them."""
