"""The planner's brain: the task plan and the HDT loop (hypothesize, run GASL,
evaluate, decide).

Flow (the planner worker calls `handle`, which runs one handler per message; each returns
a Step: the messages and the round's decision with its rationale; see `handlers`):

    intent.analyzed    -> on_intent_analyzed: one call plans the tasks -> task.planned(0)
    task.planned(i)    -> on_task_planned:
                            generation task -> generation.requested (earlier outcomes as
                              evidence, incomplete_evidence if any was cut short)
                            graph_analysis task -> hypothesis + first GASL plan
                              -> gasl.plan_requested(round 0)
    gasl.plan_executed -> on_gasl_executed: ONE call evaluates the records and state and
                          proposes the next plan:
                            continue / refine / pivot -> gasl.plan_requested(round + 1);
                              a pivot abandons the round just run (marked in the history)
                              and the next starts from the state that round started from
                              (state_from); a refine's "caps" become SET commands first
                            complete -> TaskOutcome (a `${var}` answer read from the
                              round store, `reference` set), then (finish.after_task)
                              task.planned(i + 1) | generation.requested (desired type
                              document or str) | validation.requested (any other type)
                            round cap -> TaskOutcome(incomplete=True), then task.planned(i + 1)
                              or generation.requested(incomplete_evidence=True)

Task plan answer (template `task_plan`); ids default to t1, t2...; the three overrides are
optional and apply to that task only (JobProgress.task_intent()):

    {"overview": "Find Robin Lee's co-authors, then write the CSV.",
     "tasks": [{"id": "t1", "objective": "List the people who share a report with ROBIN LEE",
                "kind": "graph_analysis"},
               {"id": "t2", "objective": "Write the co-authors as CSV", "kind": "generation",
                "dataType": "text", "expectedFormats": ["csv"],
                "qualityRequirements": {"accuracyThreshold": 0.9,
                                        "completenessThreshold": 0.8}}]}

A malformed answer gets one repair call carrying the error; a second failure gives the
default plan, reported in TaskPlanResult.notes and the plan's overview: with a graph
[graph_analysis(request), generation(write the result)], without [generation]. The model's
plan is normalised (task_plan module): no graph -> graph tasks dropped; generation tasks
merged into one, run last; at most four graph tasks.

Round answer (template `hdt_round`), one per round:

    {"evaluation": "FIND found 371 PERSON nodes; none filtered yet.",
     "decision": "refine",                 # continue | refine | pivot | complete
     "hypothesis": "Co-authors share a source chunk with ROBIN LEE.",
     "answer": null,                       # the final answer when decision is complete
     "next_actions": [                     # ranked alternatives; the most confident runs
        {"action": "refine", "confidence": 0.8,
         "plan": {"why": "people in Lee's reports",
                  "commands": ["FIND nodes WHERE id = \\"ROBIN LEE\\" AS lee", "..."],
                  "config": {"stop_on_error": true, "continue_on_empty": true}}}]}

or simply `COMPLETE: <answer>`. An answer that names a state value, `COMPLETE: ${ans}` or
`"answer": "${ans.id}"`, is that value, whole: the planner reads it from the round store
through PlannerDeps.read_round (services.planner.reference); one that names nothing is a
problem for the next round, never an empty answer. The planner names each plan
`t<task>-r<round>`. The next
prompt shows the model the records (status, count, error text: a command the GASL parser
rejected comes back as an `error` record with the parser's message), the state summary, the
graph schema and the history of rounds (RoundNote: hypothesis, plan, outcome). An answer
that cannot be used (no JSON, no plan, complete without an answer) is a `refine`: a
read-only probe plan runs and the problem is shown in the next prompt. COMPLETE before any
plan has run is treated the same way: a graph answer needs evidence.

Round cap: effective_settings(request).max_rounds (request.options.max_rounds overrides the
profile) plans per graph task. After the last one the model evaluates once more, told no
plan may run; without COMPLETE the task ends incomplete: evidence = the state summary plus
the last plan's results, provenance = source ids from the records and the state sample.
The loop never fails silently and never runs past the cap.

Prompts stay within round_prompt.BUDGETS tokens (1500 on minimal models) by cutting the
history, state, schema, last results and question, in that order.
"""

from postel.services.planner.finish import after_task, evidence_of, provenance_of
from postel.services.planner.handlers import (
    HANDLERS,
    PlannerDeps,
    handle,
    on_gasl_executed,
    on_intent_analyzed,
    on_task_planned,
)
from postel.services.planner.hdt import RoundDecision, decide_round
from postel.services.planner.round_answer import RoundAnswer, read_round_answer
from postel.services.planner.task_plan import (
    TaskPlanResult,
    default_plan,
    plan_tasks,
    read_task_plan,
)

__all__ = [
    "HANDLERS",
    "PlannerDeps",
    "RoundAnswer",
    "RoundDecision",
    "TaskPlanResult",
    "after_task",
    "decide_round",
    "default_plan",
    "evidence_of",
    "handle",
    "on_gasl_executed",
    "on_intent_analyzed",
    "on_task_planned",
    "plan_tasks",
    "provenance_of",
    "read_round_answer",
    "read_task_plan",
]
