"""Fit the serving model's defaults to the shipped Splitwise measurements, with held-out checks.

Fits (least squares on log ratios, scipy):

1. Timing — the prefill and decode step times of :func:`twin.workload.inference.prefill_time`
   and :func:`~twin.workload.inference.decode_step_time` against ``prompt_time`` and
   ``token_time``: the compute and bandwidth utilisations (``mfu``, ``mbu``) and the serving
   stack's per-layer and per-collective-step overheads (``LAYER_OVERHEAD``,
   ``COLLECTIVE_OVERHEAD``). Fabric bandwidth and latency come from the catalogue.
2. Power — the A100's active-idle power and the activities of streaming HBM and of the tensor
   engines (``p_active_idle``, ``u_hbm``, ``u_tensor``) against ``average_power``, with the
   device model of :mod:`twin.power.device` at a 60 degC die and the *measured* phase times.

Held-out checks: timing fitted on Llama-2-70B and tested on BLOOM-176B, and fitted on A100 and
tested on H100; power fitted on Llama-2-70B and tested on BLOOM-176B. Usage:
``python benchmarks/fit_serving_model.py``; it prints the fitted values (which live in the
catalogue and in twin/workload/inference.py with this script named as their source) and the
ratios model/measured.
"""

from __future__ import annotations

import numpy as np

from twin.catalog import load_catalog
from twin.workload.measured import (
    fit_power,
    fit_timing,
    power_model,
    splitwise_power_rows,
    splitwise_timing_rows,
    timing_ratios,
)


def _summary(name, r):
    r = np.asarray(r)
    return (f"{name:34s} median {np.median(r):.3f}  range {r.min():.2f}-{r.max():.2f}  "
            f"within 25 %: {np.mean(np.abs(r - 1) <= 0.25):.0%}  (n={r.size})")


def main():
    cat = load_catalog()
    rows = splitwise_timing_rows(cat)
    fit_all = fit_timing(rows)
    print("timing fit, all shipped rows:", {k: f"{v:.4g}" for k, v in fit_all.items()})
    pf, dec = timing_ratios(rows, **fit_all)
    print(_summary("  prefill, all", pf))
    print(_summary("  decode, all", dec))
    for label, train_sel, test_sel in (
        ("Llama-2-70B -> BLOOM-176B", rows["model"] == "llama2-70b", rows["model"] == "bloom-176b"),
        ("A100 -> H100", rows["hardware"] == "a100-80gb", rows["hardware"] == "h100-80gb"),
    ):
        fit = fit_timing(rows[train_sel])
        pf, dec = timing_ratios(rows[test_sel], **fit)
        print(f"held out, fit {label}:", {k: f"{v:.4g}" for k, v in fit.items()})
        print(_summary("  prefill (held out)", pf))
        print(_summary("  decode (held out)", dec))

    chip = cat.chips["a100-sxm"]
    prow = splitwise_power_rows(cat)
    fit_p = fit_power(prow, chip)
    print("power fit, A100, all rows:", {k: f"{v:.4g}" for k, v in fit_p.items()})
    print(_summary("  average power, all", power_model(prow, chip, **fit_p) / prow["average_power"]))
    llama = prow["model"] == "llama2-70b"
    fit_l = fit_power(prow[llama], chip)
    print("power fit on Llama-2-70B:", {k: f"{v:.4g}" for k, v in fit_l.items()})
    print(_summary("  average power, BLOOM (held out)",
                   power_model(prow[~llama], chip, **fit_l) / prow[~llama]["average_power"]))


if __name__ == "__main__":
    main()
