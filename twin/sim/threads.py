"""BLAS threads while a run steps: one by default.

The step's linear algebra is many small products — each sled group's (sleds × m)·(m × m) with m
at most ~30 — and small batched solves. OpenBLAS's default (a thread per core) wakes its
threads for each of them and costs more than it saves: at Frontier size (9,472 sleds of 12
nodes) one product took 44.7 ms with the default threads against 1.2 ms on one thread, and
sweep workers running side by side oversubscribe the cores. So the run loop holds BLAS to one
thread (threadpoolctl) unless the user asks otherwise.

``TWIN_BLAS_THREADS=N`` sets another limit for the run loop; ``TWIN_BLAS_THREADS=0`` leaves the
libraries' own defaults (``OPENBLAS_NUM_THREADS`` and friends) untouched.
"""

from __future__ import annotations

import contextlib
import os

from twin.scenario.errors import ScenarioError

#: Environment variable that sets the run loop's BLAS thread limit (0: no limit).
ENV = "TWIN_BLAS_THREADS"
#: BLAS threads in the run loop when the environment does not say.
DEFAULT_THREADS = 1


def blas_threads() -> int | None:
    """The run loop's BLAS thread limit: ``TWIN_BLAS_THREADS`` or 1; None for no limit.

    Raises
    ------
    ScenarioError
        When ``TWIN_BLAS_THREADS`` is not a whole number ≥ 0 (one line naming the variable).
    """
    text = os.environ.get(ENV, "").strip()
    if not text:
        return DEFAULT_THREADS
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise ScenarioError(f"expected a whole number of threads >= 0 (0: the libraries' default), got {text!r}",
                            file="<environment>", path=ENV)
    return n or None


@contextlib.contextmanager
def limited_blas(threads: int | None = DEFAULT_THREADS):
    """Hold BLAS libraries (OpenBLAS, MKL, BLIS) to ``threads`` threads inside the block
    (None: leave them as they are)."""
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        yield


def blas_limiter(threads: int | None = DEFAULT_THREADS):
    """:func:`limited_blas` for a loop that enters it often: returns a function giving the
    block, with the BLAS libraries looked up once (threadpoolctl's ``ThreadpoolController``).

    Entering :func:`limited_blas` inspects the loaded libraries each time (about 0.75 ms of CPU
    time here); a stored controller's ``limit`` costs about 15 µs, which matters to a caller
    that steps a simulation in short bursts (the control environment, once per interval).
    Libraries loaded after the call are not limited, so SciPy's linear algebra (its own
    OpenBLAS beside NumPy's, loaded when a component first imports ``scipy.linalg``) is loaded
    first.
    """
    if threads is None:
        return contextlib.nullcontext
    import scipy.linalg  # noqa: F401  (SciPy's BLAS, loaded before the controller looks)
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()
    return lambda: controller.limit(limits=threads, user_api="blas")
