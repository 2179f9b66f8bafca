"""Calibration to measured telemetry, parameter uncertainty and ensembles, and live shadowing.

- :mod:`twin.calibrate.spec` — the scenario's ``telemetry:`` section (pydantic);
- :mod:`twin.calibrate.telemetry` — readers (long and wide tables, Prometheus), foreign metric
  names translated once, unit and sanity checks;
- :mod:`twin.calibrate.params` — fitted parameters as named paths into the catalogue and the
  scenario (``chips.a100-sxm.p_idle``, ``site.cold_aisle``, ``telemetry.utilisation.busy``);
- :mod:`twin.calibrate.model` — the twin driven by measured utilisation, many parameter sets
  in one run;
- :mod:`twin.calibrate.fit` — robust joint least squares on power and temperature, σ from the
  Jacobian or a block bootstrap, before/after figures on fit and held-out windows;
- :mod:`twin.calibrate.overlay` — the overlay file and the JSON report;
- :mod:`twin.calibrate.ensemble` — Monte Carlo over fitted and catalogue uncertainties on Dask;
- :mod:`twin.calibrate.shadow` — the twin run alongside a live site, residuals as metrics.
"""
