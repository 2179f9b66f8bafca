"""Plug-flow transport delay and sensor lag against closed forms; heat held in transit."""

import numpy as np
import pytest

from twin.cooling.transport import PlugFlowDelay, sensor_lag, transport_delay


def test_step_reaches_the_outlet_after_the_transit_time():
    vol, flow, dt = np.array([0.5, 0.5]), np.array([0.01, 0.005]), 1.0  # τ = 50 s and 100 s
    tau = transport_delay(vol, flow)
    assert tau.tolist() == [50.0, 100.0]
    line = PlugFlowDelay(vol, np.full(2, 30.0), capacity=256)
    arrival = np.full(2, np.nan)
    rho_cp = 4.18e6
    e0 = line.stored_heat(rho_cp)
    heat_in = heat_out = 0.0
    for k in range(200):
        t_in = np.full(2, 25.0)  # the supply set-point stepped from 30 to 25 °C at t = 0
        out = line.step(t_in, flow, dt)
        heat_in += rho_cp * flow * dt * t_in
        heat_out += rho_cp * flow * dt * out
        arrival[np.isnan(arrival) & (out < 30.0 - 1e-9)] = (k + 1) * dt
    # the new temperature starts to leave in the step that ends at τ (plug flow, no mixing)
    assert arrival.tolist() == pytest.approx(tau + dt, abs=dt)
    # heat: in − out = change of what the pipe holds (to rounding)
    assert heat_in - heat_out == pytest.approx(line.stored_heat(rho_cp) - e0, rel=1e-12)


def test_no_flow_holds_and_zero_volume_passes_through():
    line = PlugFlowDelay(np.array([0.1]), np.array([30.0]))
    assert line.step(np.array([20.0]), np.array([0.0]), 1.0).tolist() == [30.0]
    assert np.isinf(transport_delay(0.1, 0.0))


def test_sensor_lag_is_the_exact_first_order_response():
    y = np.array(0.0)
    for _ in range(30):
        y = sensor_lag(y, 1.0, 1.0, 20.0)
    assert y == pytest.approx(1 - np.exp(-30 / 20), rel=1e-12)
    assert sensor_lag(0.0, 1.0, 1.0, 0.0) == 1.0  # no lag


def test_short_history_merges_slugs_and_keeps_the_heat():
    line = PlugFlowDelay(np.array([1.0]), np.array([30.0]), capacity=8)  # τ = 100 steps
    rho_cp, flow = 4.18e6, np.array([0.01])
    e0 = line.stored_heat(rho_cp)
    heat_in = heat_out = 0.0
    for k in range(300):
        t_in = np.array([20.0 + 5.0 * np.sin(k / 7.0)])
        out = line.step(t_in, flow, 1.0)
        heat_in += rho_cp * 0.01 * t_in[0]
        heat_out += rho_cp * 0.01 * out[0]
    assert heat_in - heat_out == pytest.approx(float((line.stored_heat(rho_cp) - e0)[0]), rel=1e-9, abs=1e-3)


@pytest.mark.parametrize("at", [60, 0])
def test_setpoint_step_reaches_the_racks_after_the_supply_pipe_transit(at):
    """The quickstart's CDU supply set-point steps 34 → 35 °C at 60 s (and at 0 s, where the
    first step's water must enter the pipe too, not a step late). The new water reaches the
    racks τ = V_supply / Q later (V from the catalogue, Q the run's secondary flow, constant
    here): the racks' supply over step k is the mean of the CDU's outlet over
    [k − τ, k + 1 − τ], as with a plant: 34 °C until the step the front leaves the pipe in,
    in that step the plug-flow mix 34 + f, f = the share of new water, then 35 °C. Closed form
    to 1e-9 (exact arithmetic on a plug flow at constant Q)."""
    from tests.conftest import SCENARIOS
    from twin.catalog.model import load_catalog
    from twin.export.dataset import build_tree
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation
    from twin.units import RHO_WATER

    over = {"time": {"duration": "150 s"}, "record": {"rack": "1 s", "cdu": "1 s", "device": "off"},
            "events": [{"at": f"{at} s", "kind": "setpoint_change", "target": "cdu-1", "value": "35 degC"}]}
    sim = Simulation(load_scenario(SCENARIOS / "quickstart.yaml", over))
    sim.run()
    tree = build_tree(sim)
    supply = tree["rack"]["t_coolant_supply"].values[:, 0]
    flow = tree["cdu"]["flow"].values[:, 0] / RHO_WATER  # [m³/s]
    assert np.ptp(flow[max(at - 5, 0):]) < 1e-12 * flow[at]  # idle: the flow is steady
    tau = load_catalog().cdus["in-row-1350kw"].supply_volume.si / flow[at]
    assert 20 < tau < 60  # 150 L at a tenth of the design flow: tens of seconds
    first = int(np.flatnonzero(supply != 34.0)[0])  # record interval [first, first + 1) s
    assert first == at + int(np.floor(tau))  # the window [first − τ, first + 1 − τ] passes `at`
    share = first + 1 - (at + tau)  # new water in that window
    assert supply[first] == pytest.approx(34.0 + share, abs=1e-9)
    assert np.all(supply[first + 1:] == 35.0)
    assert np.all(supply[:first] == 34.0)


def test_setpoint_step_reaches_the_racks_after_the_transit_with_the_plant():
    """With the facility plant on: the Phoenix CDU's set-point steps 42 → 45 °C at 60 s; the
    plant's valve loop moves the CDU outlet over the next minutes, and every rack (the farthest
    included: the catalogue's supply volume is the pipe to the last rack) gets that outlet
    delayed by τ = V_supply / Q in plug flow. Closed form, independent of the model's slug
    bookkeeping: the racks' supply over step k is the mean of the (piecewise-constant) outlet
    over [k − τ, k + 1 − τ]. To 1e-9 K: exact arithmetic at constant Q, rounding aside."""
    from tests.conftest import SCENARIOS
    from twin.catalog.model import load_catalog
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation
    from twin.units import RHO_WATER

    over = {"time": {"duration": "120 s", "step": "1 s"}, "record": {"rack": "off", "device": "off"},
            "events": [{"at": "60 s", "kind": "setpoint_change", "target": "cdu-1", "value": "45 degC"}]}
    sim = Simulation(load_scenario(SCENARIOS / "design-day-phoenix.yaml", over))
    outlet, racks, flow = [], [], []
    while sim.time < 120.0 - 1e-9:
        outlet.append(float(sim.plant.cdu_supply[0]))  # leaves the CDU over this step
        racks.append(sim.state["cdu.t_supply_next"].copy())  # reaches the racks over this step
        sim.step()
        flow.append(float(sim.state["cdu.flow"][0]) / RHO_WATER)
    outlet, flow = np.array(outlet), np.array(flow)
    racks = np.array(racks)[:, 0]
    assert np.ptp(flow) < 1e-12 * flow[0]  # the racks' design flows: constant
    tau = load_catalog().cdus["in-row-1350kw"].supply_volume.si / flow[0]
    assert 15 < tau < 25  # 150 L at the two racks' 460 L/min

    def window_mean(a, b):
        j = np.arange(np.floor(a), np.ceil(b))
        overlap = np.clip(np.minimum(b, j + 1) - np.maximum(a, j), 0.0, None)
        return float((overlap * outlet[np.clip(j.astype(int), 0, None)]).sum() / (b - a))

    expected = np.array([window_mean(k - tau, k + 1 - tau) for k in range(outlet.size)])
    moved = int(np.flatnonzero(outlet != outlet[0])[0])
    assert moved == 61  # the plant's first supply after the set-point change
    assert racks[1:] == pytest.approx(expected[1:], abs=1e-9)
    arrived = int(np.flatnonzero(racks != racks[0])[0])
    assert arrived == moved + int(np.floor(tau))  # not before the transit time
    assert racks[-1] > racks[0] + 0.5  # and the change does reach the racks
