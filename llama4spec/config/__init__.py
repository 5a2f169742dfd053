"""Configuration: schema (dataclasses), composition (Hydra) and validation."""
