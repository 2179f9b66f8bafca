"""Scale-out network power as a component: switches and optics outside the racks.

With a scenario ``network: {scale_out: …}`` the fabric is sized from the cluster's NIC ports
(:class:`twin.network.cluster.ScaleOutNetwork`); its switches and optics draw a constant power
that is part of IT power (the racks' shelves add it to ``facility.p_it``) and whose heat goes to
the room air (the rack thermal component adds it to ``facility.q_air``). Without ``network:`` the
power is 0 W, so the variable always exists.
"""

from __future__ import annotations

import numpy as np

from twin.sim.component import Component, Var

P_NETWORK = Var("facility", "p_network", "W",
                "scale-out network switches and optics outside the racks (part of p_it; heat to room air)")


class NetworkPower(Component):
    """Constant scale-out network power [W].

    Parameters
    ----------
    network : ScaleOutNetwork or None
        The sized fabric (its ``power`` [W]); None for no scale-out network.
    """

    outputs = (P_NETWORK,)
    phase = "power"

    def __init__(self, network=None):
        self.network = network
        self.power = np.array([float(network.power) if network is not None else 0.0])

    def initialise(self, state) -> None:
        state["facility.p_network"] = self.power

    def step(self, t: float, dt: float, state) -> None:
        state["facility.p_network"] = self.power
