"""KPIs and reports."""
