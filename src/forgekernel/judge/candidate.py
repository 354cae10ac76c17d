"""The candidate as the judge sees it: :mod:`forgekernel.candidate`, under the judge's names.

The judge never runs a candidate from where the agent wrote it: :func:`stage` copies its
sources into a judge-owned directory, and :func:`candidate_hash` names it by their content.
One definition serves the judge, the run dir and the CLI; it lives in forgekernel.candidate.
"""

from __future__ import annotations

from forgekernel.candidate import (
    KERNEL_FILE,
    MAX_BYTES,
    MAX_FILES,
    SOURCE_SUFFIXES,
    CandidateError,
    resolve,
    stage,
)
from forgekernel.candidate import source_files as candidate_files
from forgekernel.candidate import source_hash as candidate_hash

__all__ = ["KERNEL_FILE", "MAX_BYTES", "MAX_FILES", "SOURCE_SUFFIXES", "CandidateError",
           "candidate_files", "candidate_hash", "resolve", "stage"]
