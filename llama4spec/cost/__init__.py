"""The price of an experiment before it starts: what each planned step spends (``model.Work``), the
rates that turn starts and runs into seconds (``rates``), the least and most of a step and of a
runbook (``model.Cost``), and a budget in wall time or GPU-hours (``budget``). Pure: no I/O beyond
reading a noise profile's costs."""
