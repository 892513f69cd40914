"""ptxas under tritonhook's control: the wrapper that records each call (`wrapper`) and CompileIQ's space of control
files (`tune_space`). Finding and running the binaries is `tritonhook.binaries` (a layer below); the same PTX
assembled by every ptxas at hand is the feature `tritonhook.ptxas_matrix` (`tritonhook ptxas-matrix`)."""
