"""Slot bookkeeping constants of the inference pool, shared by its two event loops (the numpy
reference in :mod:`twin.workload.inference` and the compiled one in
:mod:`twin.workload.serving_kernel`)."""

#: Slot phases.
EMPTY, PREFILL, DECODE = 0, 1, 2
#: Output tokens left below which a sequence counts as finished [tokens] (decode is tracked in
#: fractional steps; this absorbs rounding only).
DONE_TOKENS = 1e-9
#: Decode-step counter above which a replica's counters are shifted back to 0, so that fractional
#: steps keep their precision [1].
K_REBASE = 65536.0
