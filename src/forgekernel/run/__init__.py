"""The run: the engine's loop, its decisions and effects, the state folded from the ledger, the run dir and its derived files, the workspace and what the agents see."""
