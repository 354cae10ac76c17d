"""Test-only parts for the engine tests: a small real judge (no mocks) and helpers."""
