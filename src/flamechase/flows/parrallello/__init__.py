"""parrallello: big work as parallel fronts, with the runtime as the lead.

Fronts own files (a single writer per file), each runs in blocks of up to 3 rounds; in a
round fresh builders work on tickets in their own copies, the runtime takes back only the
files each builder owns, runs the front's gate `--full` itself, and a fresh adversarial
critic tries to refute that the front meets its targets. Approval = 0 majors, 0 mediums and
every gate PASS, recounted by the runtime. Modules: `plan` (fronts, waves, ownership checked
on globs), `gates` (fail-closed judging), `verdict` (results and the approval rule),
`tickets`, `state`, `planner` (the planner's turn and the fronts a plan opens), `checkpoint`
(the source's, before the first wave), `front` (prep, opening, integration), `rounds` and
`closing` (a round's phases and its end), `runtime` (the `Run` commands), `briefs` (what
agents are told), `progress` (bars and `status`), `flow` (the decider).
"""

from flamechase.flows.parrallello.flow import FLOW, Parrallello

__all__ = ["FLOW", "Parrallello"]
