"""Trn3 vs Trn2 UltraServer: performance per watt of the same training job.

Runs scenarios/trn3-training.yaml and scenarios/trn2-training.yaml (the same work per iteration,
iteration times from each chip's dense FP8 throughput at 40 % MFU) and prints iterations per
facility kWh for each and their ratio. Usage: ``python benchmarks/trn2_vs_trn3.py``.
"""

from __future__ import annotations

from pathlib import Path

from twin.export.dataset import summary
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

ROOT = Path(__file__).resolve().parents[1]


def perf_per_watt(name: str, duration: str = "30 min") -> dict:
    sim = Simulation(load_scenario(ROOT / "scenarios" / f"{name}.yaml", {"time": {"duration": duration}}))
    sim.run()
    kpi = summary(sim)
    iterations = kpi["job_train_iterations"]
    kwh = kpi["energy_facility_J"] / 3.6e6
    return {"name": name, "iterations": iterations, "kWh": kwh, "it_per_kWh": iterations / kwh,
            "mean_kW": kpi["p_it_mean_W"] / 1e3}


def main():
    rows = [perf_per_watt("trn2-training"), perf_per_watt("trn3-training")]
    for r in rows:
        print(f"{r['name']:15s} {r['iterations']:8.1f} it  {r['kWh']:8.2f} kWh  "
              f"{r['mean_kW']:7.1f} kW  {r['it_per_kWh']:.3f} it/kWh")
    print(f"Trn3/Trn2 performance per watt: {rows[1]['it_per_kWh'] / rows[0]['it_per_kWh']:.2f}x "
          f"(AWS claim: 4x); compute per UltraServer: "
          f"{rows[1]['iterations'] / rows[0]['iterations']:.2f}x (AWS claim: 4.4x)")


if __name__ == "__main__":
    main()
