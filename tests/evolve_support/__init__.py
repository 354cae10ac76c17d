"""Helpers for the self-evolution tests."""
