"""LLM serving jobs (``inference``): requests from a trace or Poisson arrivals, served by
replicas of ``replica_size`` chips (the serving model is :mod:`twin.workload.inference`).

A replica runs at its slowest chip's clock, and not at all while one of its chips is tripped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.scenario.errors import FieldError
from twin.workload.job_kinds import QUEUED, UNPLACEABLE, Ahead, JobKind, register


def scale_up_link(catalog, kind: str) -> tuple[float, float]:
    """Per-chip bandwidth [B/s] and step latency [s] of the scale-up fabric of the catalogue's
    first sled, system or rack that names one for ``kind`` chips; no fabric: (inf, 0).

    For benchmarks that compare chips without a scenario; a simulated job uses the fabric its
    own devices' racks declare (:func:`declared_link`)."""
    fabrics = getattr(catalog, "fabrics", None) or {}
    for holder in (*getattr(catalog, "sleds", {}).values(), *getattr(catalog, "systems", {}).values(),
                   *getattr(catalog, "racks", {}).values()):
        name = (getattr(holder, "fabric", None) or {}).get(kind) if isinstance(getattr(holder, "fabric", None), dict) else None
        if name in fabrics:
            f = fabrics[name]
            return f.bandwidth.si, f.latency.si
    return np.inf, 0.0


def declared_link(catalog, names) -> tuple[float, float]:
    """Per-chip bandwidth [B/s] and step latency [s] of the scale-up fabric that the devices'
    sleds, racks or systems declare (``names``: the devices' fabric names, "" for none).

    Devices on several fabrics get the slowest (lowest bandwidth, highest latency): an inference
    pool's replicas share one serving model. No fabric: (inf, 0) — a replica of one chip, or chips
    whose collectives the catalogue does not time.
    """
    named = sorted({str(n) for n in np.asarray(names, dtype=object).ravel() if n})
    if not named:
        return np.inf, 0.0
    links = [(catalog.fabrics[n].bandwidth.si, catalog.fabrics[n].latency.si) for n in named]
    return min(b for b, _ in links), max(a for _, a in links)


@dataclass
class InferenceState:
    """Running state of a serving job beyond the shared one."""

    requests: object = None  # request table (pandas DataFrame: arrival [s], prompt and output tokens)
    chip: object = None  # catalogue chip of the replicas
    pool_args: dict | None = None  # serving model arguments (twin.workload.inference.pool_arguments)
    pool: object = None  # InferencePool once started
    replicas: np.ndarray | None = None  # devices by replica, shape (replicas, replica_size)
    trace_end: float | None = None  # arrival of a trace-driven job's last request [s]
    #: The pool's checkpoint while a block served ahead is neither finished nor cancelled (an
    #: interrupt between the two): the pool is put back before it serves again.
    pending: tuple | None = None


@register("inference")
class Inference(JobKind):
    """Continuous-batching LLM serving on replicas of ``replica_size`` chips."""

    state_type = InferenceState
    uses_hosts = True

    def prepare(self, jobs, job, base) -> None:
        """Requests, the serving model from the chip's catalogue figures, and the check that
        every request's KV cache fits a replica (raises FieldError)."""
        spec, ks = job.spec, job.kind_state
        if job.need % spec.replica_size:
            raise FieldError(("jobs", job.index, "replica_size"),
                             f"{job.need} devices do not split into replicas of {spec.replica_size}")
        ks.requests = self._requests(jobs, job, base)
        ks.chip = jobs.catalog.chips[spec.devices.kind]
        sy = jobs.system
        fabrics = sy.device_fabric[job.candidates] if sy.device_fabric.size else []
        ks.pool_args = self._pool_args(job, jobs.catalog, declared_link(jobs.catalog, fabrics))
        r = ks.requests
        need = (r["prompt_tokens"] + r["output_tokens"]).to_numpy() * spec.model.kv_bytes_per_token
        cap = ks.pool_args["kv_capacity"]
        if need.size and need.max() > cap:
            i = int(np.argmax(need > cap))
            raise FieldError(("jobs", job.index, "replica_size"),
                             f"request {i} needs {need[i] / 1e9:.3g} GB of KV cache; a replica of "
                             f"{spec.replica_size} holds {cap / 1e9:.3g} GB beside the weights")

    @staticmethod
    def _pool_args(job, catalog, link) -> dict:
        """The serving model of the job from its chip's catalogue figures (checked) and the
        scale-up ``link`` (bandwidth, latency) its devices' racks declare."""
        from twin.workload.inference import pool_arguments

        spec, m = job.spec, job.spec.model
        try:
            return pool_arguments(
                job.kind_state.chip, spec.replica_size, params=m.params, fmt=m.format,
                kv_bytes_per_token=m.kv_bytes_per_token, layers=m.layers, d_model=m.d_model,
                link=link, mfu=spec.mfu, mbu=spec.mbu,
                layer_overhead=spec.layer_overhead, collective_overhead=spec.collective_overhead,
                max_batch_size=spec.max_batch_size, max_prefill_tokens=spec.max_prefill_tokens,
                prefill_chunk=spec.prefill_chunk)
        except ValueError as exc:
            field = "replica_size" if "do not fit" in str(exc) else "devices"
            raise FieldError(("jobs", job.index, field), f"'{spec.devices.kind}': {exc}") from None

    @staticmethod
    def _requests(jobs, job, base):
        """The job's request table: a trace file (Azure format) or seeded Poisson arrivals."""
        from twin.workload.traces import AZURE_CODE_TRACE, poisson_arrivals, read_azure_trace

        spec = job.spec
        horizon = 10 * 365 * 86400.0
        if spec.trace is not None:
            path = AZURE_CODE_TRACE if spec.trace == "azure-code" else (base / spec.trace)
            try:
                table = read_azure_trace(path)
            except (ValueError, OSError) as exc:
                raise FieldError(("jobs", job.index, "trace"), str(exc)) from None
            table = table.assign(arrival=table["arrival"] / spec.time_scale)
            job.kind_state.trace_end = spec.start + (float(table["arrival"].max()) if len(table) else 0.0)
        else:
            arr = spec.arrivals
            rate = arr.daily_profile if arr.daily_profile is not None else arr.rate
            duration = jobs.duration or horizon
            table = poisson_arrivals(rate, duration, jobs.rng, base_rate=arr.rate)
        return table.assign(arrival=table["arrival"] + spec.start)

    def start(self, jobs, job, t: float) -> None:
        from twin.workload.inference import InferencePool

        spec, ks = job.spec, job.kind_state
        n_rep = job.devices.size // spec.replica_size
        ks.pool = InferencePool(n_rep, requests=ks.requests, t_start=t, **ks.pool_args)
        ks.replicas = job.devices.reshape(n_rep, spec.replica_size)

    def step(self, jobs, job, t, ts, clock, tripped, u, t_die):
        """Serve the sub-steps: replicas run at their slowest chip's clock (0 if one tripped)."""
        spec, ks = job.spec, job.kind_state
        _settle(ks)
        rep_clock = clock[ks.replicas].min(axis=1) * ~tripped[ks.replicas].any(axis=1)
        steps = ks.pool.advance_steps(ts[0], jobs.h_w, ts.size, rep_clock)
        u[:, ks.replicas] = steps.u[:, :, None]
        tokens = 0.0
        for out in steps.output_tokens.sum(axis=1).tolist():  # summed sub-step by sub-step
            tokens += out
        u[:, job.network] = spec.network_load
        u[:, job.hosts] = spec.host_load
        job.tokens += tokens
        job.progress = float(ks.pool.n_completed)
        job.rate = tokens / (jobs.h_w * ts.size)
        return None

    def ahead(self, jobs, job, t, ts, clock, tripped, u):
        """The serving of the steps starting at ``t`` while every chip of the pool runs at
        full clock and none is tripped: the replicas' clocks are then 1 whatever the loop
        does, so the pool serves the block's k × n_sub sub-steps in one call of its event
        loop (:meth:`~twin.workload.inference.InferencePool.advance_steps`: the same steps,
        one after the other, as :meth:`step` takes n_sub at a time), and the tokens, progress
        and rate of each step are summed as :meth:`step` sums them. The compiled loop stops
        before a step that starts with a chip of the pool below full clock or tripped; the
        pool is then put back as after the steps taken (:meth:`InferencePool.checkpoint
        <twin.workload.inference.InferencePool.checkpoint>`, and those steps served again:
        the same results)."""
        spec, ks, h_w = job.spec, job.kind_state, jobs.h_w
        _settle(ks)
        dev = job.devices
        if clock[dev].min() != 1.0 or tripped[dev].any():
            return None
        k, n_sub = ts.shape
        pool = ks.pool
        t0 = float(ts[0, 0])
        saved = ks.pending = pool.checkpoint(t0 + (k + 1) * n_sub * h_w)
        done0, tokens0 = pool.n_completed, job.tokens
        steps = pool.advance_steps(t0, h_w, k * n_sub, 1.0)
        u[:, :, ks.replicas] = steps.u.reshape(k, n_sub, -1)[..., None]
        u[:, :, job.network] = spec.network_load
        u[:, :, job.hosts] = spec.host_load
        per_step = []  # each step's tokens, summed sub-step by sub-step as step() sums them
        for row in steps.output_tokens.sum(axis=1).reshape(k, n_sub).tolist():
            tokens = 0.0
            for out in row:
                tokens += out
            per_step.append(tokens)
        per_step = np.array(per_step)
        tokens = np.add.accumulate(np.concatenate([[tokens0], per_step]))
        progress = (done0 + np.cumsum(steps.completed)[n_sub - 1:: n_sub]).astype(float)
        rate = per_step / (h_w * n_sub)

        def finish(n, clock, off):
            if n < k:  # the pool as after the first n steps: served again from the checkpoint
                pool.rollback(saved)
                pool.advance_steps(t0, h_w, n * n_sub, 1.0)
            ks.pending = None
            job.tokens, job.progress, job.rate = float(tokens[n]), float(progress[n - 1]), float(rate[n - 1])
            return progress[:n], rate[:n], tokens[1: n + 1], np.full(n, float(job.state))

        return Ahead(k, dev, finish, lambda: _settle(ks))

    def warnings(self, job, name: str, t_end: float) -> list[str]:
        out = []
        if job.state not in (QUEUED, UNPLACEABLE) and job.progress == 0:
            out.append(f"{name} served 0 requests")
        end = job.kind_state.trace_end
        if end is not None and end < t_end:
            out.append(f"{name}: its trace's last request arrives at {end:,.0f} s of a {t_end:,.0f} s run "
                       f"(no requests after)")
        return out


def _settle(ks: InferenceState) -> None:
    """Put the pool back as before a block served ahead that was neither finished nor cancelled."""
    if ks.pending is not None:
        ks.pool.rollback(ks.pending)
        ks.pending = None
