"""Facility-side cooling: the plant's building blocks as pure functions of arrays (heat exchangers,
pumps, fans, chillers, cooling towers, dry coolers, CRAHs: :mod:`twin.cooling.plant` and the
modules beside it), mixed volumes (:mod:`twin.cooling.volumes`), heat-rejection banks
(:mod:`twin.cooling.heat_rejection`), the stateful plant (:mod:`twin.cooling.facility`) and the
CDU components (:mod:`twin.cooling.cdu`, :mod:`twin.cooling.liquid_to_air`). Weather is the
site's: :mod:`twin.site.weather`.
"""
