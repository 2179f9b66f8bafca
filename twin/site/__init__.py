"""The site: outdoor weather and psychrometrics (:mod:`twin.site.weather`): EPW typical years,
ASHRAE design days, CSV series and constants, as the facility plant and the heat rejection see them.
"""
