"""Self-evolution: a chain of generations, each a run seeded by the last."""
