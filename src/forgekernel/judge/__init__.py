"""The judge: ``judge(task, candidate, runner, options) -> Verdict``.

Each candidate is staged into a judge-owned directory, hashed (:func:`candidate_hash`),
checked statically, then judged by a fresh worker process (``python -m
forgekernel.judge.worker``) whose only answer comes back on a signed channel. See
docs/judge.md for the method and the defenses.
"""

from forgekernel import lazy

_ORIGIN = {"JUDGE_NAME": "forgekernel.judge.api", "JudgeError": "forgekernel.judge.api", "judge": "forgekernel.judge.api",
           "CandidateError": "forgekernel.judge.candidate", "candidate_hash": "forgekernel.judge.candidate",
           "JudgeOptions": "forgekernel.judge.options", "check_options": "forgekernel.judge.options"}
"""Imported on first use (:mod:`forgekernel.lazy`)."""

__all__ = sorted(_ORIGIN)
__getattr__ = lazy.attributes(__name__, _ORIGIN)
