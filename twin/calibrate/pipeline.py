"""A whole calibration from a loaded scenario: telemetry, windows, parameters, fit, scores.

This is what ``twin calibrate`` runs (the command adds printing and writing). Every problem is a
:class:`~twin.scenario.errors.ScenarioError` (one line) raised before anything is fitted.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from twin.calibrate import params as parameters
from twin.calibrate.fit import CalibrationResult, calibrate
from twin.calibrate.model import TwinModel
from twin.calibrate.telemetry import Telemetry, check, is_url, read_telemetry
from twin.scenario.errors import FieldError, OptionError, ScenarioError

#: Without windows: the most recent span of this length is used, its first half to fit and the
#: second half held out [days].
DEFAULT_SPAN_DAYS = 28


@dataclass
class Calibration:
    result: CalibrationResult
    telemetry: Telemetry
    source: str  # as shown in sources and reports (the path as given, or the URL)


def _window(start, end, what: str, file: str):
    a, b = pd.Timestamp(start), pd.Timestamp(end)
    if not b > a:
        raise ScenarioError(f"{what}: 'to' ({b}) must be after 'from' ({a})", file=file)
    return a, b


def windows(loaded, tele_span=None, fit=None, holdout=None):
    """(fit, holdout or None) windows from the command line, the scenario or the data's span."""
    spec = loaded.scenario.telemetry
    file = str(loaded.path)
    if fit is None and spec.fit is not None:
        fit = (spec.fit.start, spec.fit.end)
    if holdout is None and spec.holdout is not None:
        holdout = (spec.holdout.start, spec.holdout.end)
    if fit is None:
        if tele_span is None:
            raise ScenarioError("give the fit window: --from/--to or telemetry.fit", file=file)
        start, end = tele_span
        span = min(end - start, pd.Timedelta(days=DEFAULT_SPAN_DAYS))
        start = end - span
        mid = start + span / 2
        fit, holdout = (start, mid), holdout or (mid, end)
    fit = _window(*fit, "fit window", file)
    if holdout is None:
        length = fit[1] - fit[0]
        holdout = (fit[1], fit[1] + length)
    holdout = _window(*holdout, "hold-out window", file)
    return fit, holdout


def run_calibration(loaded, source: str | None = None, fit=None, holdout=None, names=None, *,
                    n_bootstrap: int = 0, seed: int = 0, step: float | None = None, progress=None,
                    cwd: Path | None = None) -> Calibration:
    """Read the telemetry and fit.

    Parameters
    ----------
    loaded : LoadedScenario
        With a ``telemetry:`` section (its ``devices`` map telemetry ids to devices).
    source : str, optional
        A file (relative to ``cwd``) or a Prometheus URL; default ``telemetry.source`` (relative
        to the scenario).
    fit, holdout : (start, end), optional
        Windows; default the scenario's, else :func:`windows`.
    names : list of str, optional
        Parameters to fit; default ``telemetry.parameters``, else :func:`params.default_names`.
    """
    from twin.sim.build import build_system

    spec = loaded.scenario.telemetry
    if spec is None:
        raise loaded.locate(FieldError((), "no 'telemetry:' section: say where the measurements are and "
                                           "which devices they belong to (see scenarios/calibrate-a100.yaml)"))
    if not spec.devices:
        raise loaded.locate(FieldError(("telemetry",), "telemetry.devices: map at least one telemetry id to a "
                                                      "device of the scenario"))
    if source is None:
        if spec.source is None:
            raise loaded.locate(FieldError(("telemetry",), "no telemetry source: give --telemetry or telemetry.source"))
        source, base = spec.source, loaded.base
    else:
        base = cwd or Path(".")
    shown = source if is_url(source) else display_path(base / source)
    system = build_system(loaded.scenario, loaded.catalog)
    device_names = [str(n) for n in system.device_name]
    kinds_of = dict(zip(device_names, (str(k) for k in system.device_kind)))
    for ident, dev in spec.devices.items():
        if dev not in kinds_of:
            shown = ", ".join(device_names[:6]) + (", …" if len(device_names) > 6 else "")
            raise loaded.locate(FieldError(("telemetry", "devices", ident),
                                           f"no device '{dev}' in the scenario (devices: {shown})"))
    tdp = {d: loaded.catalog.chips[k].tdp.si for d, k in kinds_of.items()}
    known = fit is not None or spec.fit is not None
    if known or is_url(source):
        fit_w, hold_w = windows(loaded, None, fit, holdout)
        span = (min(fit_w[0], hold_w[0]), max(fit_w[1], hold_w[1]))
        tele = read_telemetry(spec, source, base=base, devices=device_names, tdp=tdp, span=span)
    else:  # windows from the data's span: read everything, then keep and check the span used
        tele = read_telemetry(spec, source, base=base, devices=device_names, tdp=tdp, checks=False)
        fit_w, hold_w = windows(loaded, (tele.start, tele.end), fit, holdout)
        tele = tele.restricted(min(fit_w[0], hold_w[0]), max(fit_w[1], hold_w[1]))
        check(tele, spec, tdp)
    kinds = sorted({kinds_of[d] for d in tele.devices})
    given = bool(names)  # from the caller (`twin calibrate --fit`), not the scenario
    names = list(names or spec.parameters or parameters.default_names(loaded, kinds))
    where = ("telemetry", "parameters")
    try:
        params = parameters.resolve(names, loaded, kinds, where, spec.bounds)
    except FieldError as exc:
        if given:  # blame the option the user typed, not the scenario file
            raise OptionError("--fit", exc.message) from None
        raise loaded.locate(exc) from None
    n_fit = tele.count(*fit_w)
    if n_fit <= len(params):
        raise ScenarioError(f"{n_fit} samples with power or temperature in the fit window {fit_w[0]}..{fit_w[1]} "
                            f"(data from {tele.start} to {tele.end}); need more than the {len(params)} parameters",
                            file=tele.source)
    if tele.count(*hold_w) == 0:
        tele.notes.append(f"{tele.source}: no telemetry in the hold-out window {hold_w[0]}..{hold_w[1]}; "
                          "not scored")
        hold_w = None
    with tempfile.TemporaryDirectory(prefix="twin-calibrate-") as work:
        try:
            model = TwinModel(loaded, tele, params, Path(work), step=step)
        except FieldError as exc:
            raise loaded.locate(exc) from None
        result = calibrate(model, fit_w, hold_w, n_bootstrap=n_bootstrap, seed=seed, progress=progress)
    return Calibration(result, tele, shown)


def display_path(path: Path) -> str:
    """A path as a user would write it: relative to the working folder when inside it."""
    import os

    full = os.path.normpath(os.path.abspath(path))
    rel = os.path.relpath(full)
    return rel if not rel.startswith("..") else full
