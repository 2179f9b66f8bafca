"""Facility-side cooling: weather and psychrometrics (:mod:`twin.cooling.weather`) and the plant
building blocks — heat exchangers, pumps, fans, chillers, cooling towers, dry coolers, CRAHs
(:mod:`twin.cooling.plant`). Pure functions of arrays; the driver wires them together.
"""
