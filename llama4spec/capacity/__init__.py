"""The ``capacity`` feature whole: its search settings, declared once (``search_settings.Settings``:
runbook keys, command-line flags and help); the ``capacity`` step kind (``kind``), which expands
into one ``search`` step (``search``) per server, carrying the settings whole; and the report
written from the searches' records (``write_report``)."""
