"""The judge: ``judge(task, candidate, runner, options) -> Verdict``.

Each candidate is staged into a judge-owned directory, hashed (:func:`candidate_hash`),
checked statically, then judged by a fresh worker process (``python -m
forgekernel.judge.worker``) whose only answer comes back on a signed channel. See
docs/judge.md for the method and the defenses.
"""

from forgekernel.judge.api import JUDGE_NAME, JudgeError, judge
from forgekernel.judge.candidate import CandidateError, candidate_hash
from forgekernel.judge.options import JudgeOptions, check_options

__all__ = ["JUDGE_NAME", "CandidateError", "JudgeError", "JudgeOptions", "candidate_hash",
           "check_options", "judge"]
