"""What a gauntlet cell comes to: the verdict words, one run of the client (`Run`, what the scorecard prints) and
the client's clean run (`Baseline`) the faulted ones are judged against."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..check.finding import Finding
from . import faults as catalogue
from .faults import Fault

RECOVERED, SURFACED, FAILED, HUNG = "recovered", "surfaced", "failed", "hung"
NOT_REACHED, NOT_APPLICABLE, ERROR = "not-reached", "n/a", "error"
VERDICTS = (RECOVERED, SURFACED, FAILED, HUNG, NOT_REACHED, NOT_APPLICABLE, ERROR)
# the baseline run: no fault, the conversation as recorded
CLEAN = Fault("clean", "", catalogue.GO_ON, "the conversation as recorded", "")


@dataclass
class Run:
    fault: Fault
    at: str
    edit: str
    verdict: str = NOT_APPLICABLE
    why: str = ""
    exit: int | None = None
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)  # those that blame the client and the fault caused
    output: str = ""  # the end of what the client printed, for the reader of a failing cell
    misses: list[str] = field(default_factory=list)  # requests the replay had no answer for (see --ignore)
    evidence: str = ""  # what the client sent after the fault, from the replay log
    discounted: list[str] = field(default_factory=list)  # findings not counted, each with why
    logs: list[str] = field(default_factory=list, repr=False)  # the replay logs it was judged on

    def to_json(self) -> dict:
        return {"fault": self.fault.name, "at": self.at, "edit": self.edit, "verdict": self.verdict, "why": self.why,
                "exit": self.exit, "seconds": round(self.seconds, 3), "evidence": self.evidence,
                "findings": [f.to_json() for f in self.findings], "discounted": self.discounted,
                "misses": self.misses, "output": self.output}


@dataclass
class Baseline:
    """The client's clean run: the findings it shows with no fault, and what it sent, in order."""

    run: Run
    findings: list[Finding]
    sent: list[tuple]  # each client request's key (judging.request_keys), in order
    asked: Counter  # requests (method -> count) it sent


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""
