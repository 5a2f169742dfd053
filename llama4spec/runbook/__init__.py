"""Declarative runbooks: load (schema), plan (pure), render (dry run), execute (processes, records)."""
