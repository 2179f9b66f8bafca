"""From a placed gang to the fabrics its collectives cross (:class:`CollectivePath`)."""

from __future__ import annotations

import numpy as np

from twin.network.collectives import CollectivePath, Link, torus_mean_hops

#: Scale-out fabric between domains when a scenario names none (``network.scale_out``).
DEFAULT_SCALE_OUT = "efa-ultracluster"


class PathError(ValueError):
    """A gang whose fabrics are not known (no scale-up fabric, or no NIC on the scale-out fabric)."""


def scale_out_bandwidth(system, devices: np.ndarray, fabric) -> float:
    """Scale-out bandwidth per chip of a gang, one direction [B/s].

    Each sled's NIC ports on the fabric (Σ NIC devices × ``fabric.nics`` ports each) times the
    port speed, shared by the gang's chips on that sled; the gang runs at its poorest sled:

    .. math:: β_o = \\min_s \\frac{n_{ports,s} \\, β_{port}}{n_{chips,s}}
    """
    sleds, per_sled = np.unique(system.device_sled[devices], return_counts=True)
    in_sleds = np.isin(system.device_sled, sleds)
    ports = np.zeros(system.sled_name.size)
    for nic, count in fabric.nics.items():
        mask = in_sleds & (system.device_kind == nic)
        ports += np.bincount(system.device_sled[mask], minlength=system.sled_name.size) * count.value
    return float((ports[sleds] * fabric.port_speed.si / per_sled).min())


def collective_path(system, catalog, devices: np.ndarray, scale_out: str = DEFAULT_SCALE_OUT) -> CollectivePath:
    """The fabrics a gang on ``devices`` uses: its scale-up domains and, across them, scale-out.

    Raises
    ------
    PathError
        When a device has no scale-up fabric in its rack or system, or the gang spans domains
        and its sleds have no NIC on the scale-out fabric.
    """
    names = system.device_fabric[devices] if system.device_fabric.size else np.array([""] * devices.size)
    missing = devices[names == ""]
    if missing.size:
        d = missing[0]
        raise PathError(f"'{system.device_kind[d]}' in rack '{system.rack_name[system.device_rack[d]]}' "
                        f"has no scale-up fabric (give its rack or system a `fabric:`)")
    up_name = names[0]
    up = catalog.fabrics[up_name]
    _, per_domain = np.unique(system.device_domain[devices], return_counts=True)
    p_l = int(per_domain.max())
    hops = torus_mean_hops(p_l, up.torus_dims.value) if up.topology == "torus" else 1.0
    link_up = Link(up_name, up.bandwidth.si, up.latency.si, hops)
    if per_domain.size == 1:
        return CollectivePath(int(devices.size), p_l, 1, link_up, None)
    if scale_out not in catalog.fabrics:
        raise PathError(f"the gang spans {per_domain.size} domains and there is no scale-out fabric "
                        f"'{scale_out}' in the catalogue")
    out = catalog.fabrics[scale_out]
    beta = scale_out_bandwidth(system, devices, out)
    if not beta > 0:
        raise PathError(f"the gang spans {per_domain.size} domains but its sleds have no NIC on "
                        f"'{scale_out}' (nics: {', '.join(out.nics)})")
    return CollectivePath(int(devices.size), p_l, int(per_domain.size), link_up,
                          Link(scale_out, beta, out.latency.si))
