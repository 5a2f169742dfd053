"""The ``sweep`` feature whole: the ``sweep`` step kind and its report (``kind``); its expansion
into serve, bench, settle and stop steps (``expand``: the dispatch; ``expansion``: what the designs
share; one module per design: ``design_sequential``, ``design_interleaved``, ``design_revisit``,
``design_schedule``); the ``settle`` step kind that measures a server's points until decided
(``settle``) and the decisions it and a revisit take from the records (``sequential``)."""
