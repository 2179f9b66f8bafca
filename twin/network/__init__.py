"""Networks: collective-communication time on a fabric, and the scale-out network's size and power.

- :mod:`twin.network.collectives`: pure α–β functions for all-reduce and all-to-all time from
  message size, participants, bandwidth and latency; a path through one scale-up domain or across
  domains over the scale-out fabric.
- :mod:`twin.network.cluster`: switches, links and optics of a non-blocking fat tree sized from a
  cluster's NIC ports, and its power.
"""
