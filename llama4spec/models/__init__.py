"""The models a config needs from the Hugging Face hub: what to fetch (pure) and fetching it, before
any server starts. Imports config, engine, results and errors; nothing above."""
