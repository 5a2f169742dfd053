"""What speculation saves a deployment, from what a sweep records: each setting's output throughput
per device against per-user speed over its concurrencies (``curve``), each speculative curve's ratio
over no speculation's at the speeds both reach, with its interval, verdict and crossover
(``compare``), the price of a million tokens (``price``), in words, CSV and a figure (``words``,
``figure``). Pure but for the figure's file."""
