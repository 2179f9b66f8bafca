"""What a calibration writes: the overlay a scenario includes, and the JSON report.

The overlay is a scenario fragment merged over a scenario that names it
(``overlays: [a100-fitted.yaml]``, later files win):

- ``catalog:`` each fitted catalogue figure as ``{value, source: "fitted to SOURCE,
  FROM..TO", uncertainty}`` (the uncertainty is one standard deviation, in the value's units) —
  a partial override of the entry, the other figures stay;
- ``site:`` / ``cdus:`` fitted inlet or coolant temperatures;
- ``telemetry: {utilisation: {busy, held}}`` a fitted utilisation mapping;
- ``calibration:`` every fitted parameter's SI value and σ and their correlation matrix, so that
  ``twin run --ensemble`` samples them jointly.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import yaml

import twin
from twin.calibrate.fit import CalibrationResult


def _label(t) -> str:
    s = str(t)
    return s[:-9] if s.endswith(" 00:00:00") else s


def window_label(window) -> str:
    return f"{_label(window[0])}..{_label(window[1])}"


def overlay_data(result: CalibrationResult, loaded, source: str) -> dict:
    """The overlay as YAML data (see the module docstring)."""
    fit = result.windows["fit"]
    where = f"fitted to {source}, {window_label(fit)}"
    out: dict = {}
    sc = loaded.scenario
    cdus = None
    for p, value, sigma in zip(result.params, result.value, result.sigma):
        if p.kind == "catalog":
            kind, name, field = p.path.split(".")
            fig = {"value": p.format(value), "source": where}
            if math.isfinite(sigma):
                fig["uncertainty"] = p.format_delta(sigma)
            out.setdefault("catalog", {}).setdefault(kind, {}).setdefault(name, {})[field] = fig
        elif p.kind == "scenario" and p.path.startswith("site."):
            out.setdefault("site", {})[p.field] = p.format(value)
        elif p.kind == "scenario":  # cdus.N.supply_temperature: the list is replaced whole
            if cdus is None:
                cdus = [{"name": c.name, "template": c.template, "supply_temperature": f"{c.supply_temperature:.6g} degC",
                         "count": c.count} for c in sc.cdus]
            cdus[int(p.path.split(".")[1])]["supply_temperature"] = p.format(value)
        else:
            out.setdefault("telemetry", {}).setdefault("utilisation", {})[p.field] = float(f"{value:.6g}")
    if cdus is not None:
        out["cdus"] = cdus
    out["calibration"] = {
        "source": source,
        "window": window_label(fit),
        "parameters": [{"path": p.path, "value": float(v), "sigma": float(s), "units": p.units}
                       for p, v, s in zip(result.params, result.value, result.sigma)],
        "correlation": [[round(float(x), 6) for x in row] for row in result.correlation],
    }
    rms = result.residual_rms
    if all(math.isfinite(rms[q]) for q in ("power", "temperature")):
        out["calibration"]["residual"] = {"power": float(f"{rms['power']:.6g}"),
                                          "temperature": float(f"{rms['temperature']:.6g}"),
                                          "kinds": sorted(set(result.kinds))}
        bands = {q: m.record() for q, m in result.residual.items()
                 if all(math.isfinite(m.scale[c]) and math.isfinite(m.dof[c]) for c in m.scale)}
        if len(bands) == 2:
            out["calibration"]["residual"]["bands"] = bands
    return out


def overlay_text(result: CalibrationResult, loaded, source: str) -> str:
    head = (f"# Calibration overlay written by twin calibrate {twin.__version__}\n"
            f"# scenario: {loaded.path.name}; telemetry: {source}; fit window {window_label(result.windows['fit'])}\n"
            "# Include it from a scenario with `overlays: [THIS_FILE]` (later overlays win).\n")
    return head + yaml.safe_dump(overlay_data(result, loaded, source), sort_keys=False, allow_unicode=True,
                                 width=100, default_flow_style=None)


def _num(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def report_data(result: CalibrationResult, loaded, source: str, notes: list[str], interval: float) -> dict:
    """Machine-readable figures of a calibration (``--report``)."""
    windows = {}
    for name, (a, b) in result.windows.items():
        sc = result.scores.get(name)
        entry = {"from": str(a), "to": str(b)}
        if sc is not None:
            entry["n"] = sc.n
            entry["rmse"] = {q: {k: _num(v) for k, v in d.items()} for q, d in sc.rmse.items()}
            entry["mape"] = {q: {k: _num(v) for k, v in d.items()} for q, d in sc.mape.items()}
            entry["ratio"] = {q: {k: _num(v) for k, v in d.items()} for q, d in sc.ratio.items()}
            entry["coverage_p5_p95"] = {q: _num(v) for q, v in sc.coverage.items()}
        windows[name] = entry
    params = []
    for i, p in enumerate(result.params):
        params.append({
            "path": p.path, "units": p.units, "prior": p.prior, "value": float(result.value[i]),
            "sigma": _num(result.sigma[i]), "sigma_jacobian": _num(result.sigma_jacobian[i]),
            "sigma_bootstrap": None if result.sigma_bootstrap is None else _num(result.sigma_bootstrap[i]),
            "lower": p.lower, "upper": p.upper,
        })
    return {
        "twin_version": twin.__version__,
        "scenario": str(loaded.path),
        "source": source,
        "interval_s": interval,
        "windows": windows,
        "parameters": params,
        "correlation": np.asarray(result.correlation).round(6).tolist(),
        "noise": {"power_W": result.noise["power"], "temperature_K": result.noise["temperature"]},
        "residual_rms": {"power_W": _num(result.residual_rms["power"]),
                         "temperature_K": _num(result.residual_rms["temperature"])},
        "residual": {q: {"rms": _num(m.rms), "lag1_autocorrelation": _num(m.rho),
                         "level_shift_variance": _num(m.shift),
                         "scale": {c: _num(v) for c, v in m.scale.items()},
                         "dof": {c: _num(v) for c, v in m.dof.items()}, "count": dict(m.counts)}
                     for q, m in result.residual.items()},
        "runs": result.runs,
        "status": result.status,
        "notes": list(notes),
    }


def write_atomically(files: dict[Path, str]) -> None:
    """Write every file under a temporary name first, then rename them all: either all are
    written or none is."""
    tmp = {}
    try:
        for path, text in files.items():
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            t = path.with_name(f".{path.name}.tmp-{os.getpid()}")
            t.write_text(text, encoding="utf-8")
            tmp[path] = t
        for path, t in tmp.items():
            os.replace(t, path)
    finally:
        for t in tmp.values():
            if t.exists():
                t.unlink()


def report_text(result, loaded, source, notes, interval) -> str:
    return json.dumps(report_data(result, loaded, source, notes, interval), indent=2) + "\n"
