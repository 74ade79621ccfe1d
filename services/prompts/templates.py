"""Every prompt postel sends, as data, in this one place.

Add a template by registering it on `TEMPLATES`; build it with
`build_prompt(TEMPLATES.get(name), capability, user_text=..., context=...)`."""

from __future__ import annotations

from postel.services.prompts.registry import TemplateRegistry
from postel.services.prompts.template import Example, OutputField, PromptTemplate

TEMPLATES = TemplateRegistry()

# IPV INFER / loop plan: ONE call returns all nine intent fields (messages.intent.Intent).
INTENT_ANALYSIS = TEMPLATES.register(
    PromptTemplate(
        name="intent_analysis",
        system="You analyse requests and answer with JSON only.",
        role=(
            "You are a request analyst. In a single pass you work out what the user asks for, "
            "in which language, and what a good result has to look like."
        ),
        guidelines=[
            "Restate, never summarise: normalizedRequest keeps every constraint and detail.",
            "Keep the intent short and self-contained. Only when the request carries bulky "
            "material (long data, pasted documents) move that material into contextItems.",
            "Keep references that matter (URLs, file names, identifiers) in the intent.",
            "If the request mixes languages, use the main one throughout.",
            "Do not invent requirements; when nothing is said about quality, use 0.8.",
        ],
        instructions="Analyse the user text and fill in every field:",
        fields=[
            OutputField(
                name="detectedLanguage",
                instruction="the language of the request",
                format='ISO 639-1 code, e.g. "en"',
            ),
            OutputField(
                name="normalizedRequest",
                instruction="the complete request, restated explicitly in that language",
                format="string",
            ),
            OutputField(
                name="intent",
                instruction="the core of the request in one short paragraph, in that language",
                format="string",
            ),
            OutputField(
                name="contextItems",
                instruction="bulky supporting material taken out of the intent; usually empty",
                format="list of strings",
            ),
            OutputField(
                name="primaryGoal",
                instruction="the main thing the user wants to achieve",
                format="string",
            ),
            OutputField(
                name="dataType",
                instruction="the kind of result wanted",
                format='one of "numbers", "text", "documents", "analysis", "code", "unknown"',
            ),
            OutputField(
                name="expectedFormats",
                instruction="file formats the user expects, as extensions; empty if not stated",
                format='list of strings, e.g. ["pdf", "xlsx"]',
            ),
            OutputField(
                name="qualityRequirements",
                instruction="how accurate and how complete the result must be",
                format='{"accuracyThreshold": 0.0-1.0, "completenessThreshold": 0.0-1.0}',
            ),
            OutputField(
                name="successCriteria",
                instruction="concrete checks that show the request is fulfilled",
                format="list of strings",
            ),
        ],
        output_format=(
            "Answer with one JSON object and nothing else (no markdown, no commentary), "
            "with exactly these keys:"
        ),
        examples=[
            Example(
                user_text="Fasse den Quartalsbericht auf einer Seite als PDF zusammen.",
                answer=(
                    '{"detectedLanguage": "de", '
                    '"normalizedRequest": "Fasse den Quartalsbericht auf höchstens einer Seite '
                    'zusammen und liefere das Ergebnis als PDF.", '
                    '"intent": "Quartalsbericht einseitig als PDF zusammenfassen.", '
                    '"contextItems": [], '
                    '"primaryGoal": "Eine einseitige Zusammenfassung des Quartalsberichts", '
                    '"dataType": "documents", "expectedFormats": ["pdf"], '
                    '"qualityRequirements": {"accuracyThreshold": 0.9, '
                    '"completenessThreshold": 0.8}, '
                    '"successCriteria": ["höchstens eine Seite", "als PDF geliefert"]}'
                ),
            )
        ],
    )
)

# The generator. The sections format and the continuation contract are
# shared with services/generation, which parses and merges what these prompts ask for.
_SECTIONS_SHAPE = """\
{"sections": [{"id": "unique-id", "content_type": "<type>", "elements": [...]}]}
with <type> one of heading, paragraph, bullet_list, numbered_list, table, code_block.
Element shapes: heading {"level": 1-6, "text": "..."}; paragraph {"text": "..."};
bullet_list and numbered_list {"items": ["..."]}; table {"headers": ["..."], "rows": [["..."]]};
code_block {"language": "...", "code": "..."}. Give every section an id."""

SECTIONS_OUTPUT_FORMAT = f"""\
Return ONLY one JSON document, no markdown, of this shape:
{_SECTIONS_SHAPE}"""

# The continuation is the rest of the same JSON text, not a new document: a string cut in
# the middle goes on in the next answer, so no element has to fit in one answer.
CONTINUATION_OUTPUT_FORMAT = f"""\
Answer with raw JSON text only: the characters that follow the cut, up to the end of the
document. No markdown fence, no comment. The whole document has this shape:
{_SECTIONS_SHAPE}"""

CONTINUATION_RULES = """\
Your previous answer was cut off in the middle of the JSON document. Continue it exactly
where it stops, as if you had not been interrupted:
- Your answer starts with the character that comes right after the last character of the
  text shown between the CUT_OFF markers. Do not repeat any of that text, and do not start
  the document again.
- If the cut is inside a string (a heading or paragraph text, a list item, a table cell,
  code), continue that very string: do not reopen its quote, do not repeat its beginning.
- Then close what is open and write all remaining elements and sections, up to the
  document's final closing brackets.
- Never repeat delivered sections or elements."""

_WRITER_GUIDELINES = [
    "Use only the task, the evidence and the context given; never invent facts.",
    "When evidence items carry source ids, cite them in square brackets after the claims "
    "they support, e.g. [chunk-1a2b].",
    "If the evidence is marked incomplete, say plainly what could not be established.",
    "If a VALIDATION ERROR block is present, your previous answer was rejected: fix exactly "
    "that problem and answer again in full.",
]

GENERATE_DOCUMENT = TEMPLATES.register(
    PromptTemplate(
        name="generate_document",
        system="You write documents as JSON only.",
        role="You are a careful writer who answers a task as a structured document.",
        guidelines=_WRITER_GUIDELINES,
        instructions="Write the answer to the TASK below as a sections document.",
        output_format=SECTIONS_OUTPUT_FORMAT,
    )
)

CONTINUE_DOCUMENT = TEMPLATES.register(
    PromptTemplate(
        name="continue_document",
        system="You write documents as JSON only.",
        role="You are a careful writer finishing a structured document that was cut off.",
        guidelines=_WRITER_GUIDELINES[:2],
        instructions=CONTINUATION_RULES,
        output_format=CONTINUATION_OUTPUT_FORMAT,
    )
)

GENERATE_VALUE = TEMPLATES.register(
    PromptTemplate(
        name="generate_value",
        system="You answer with the requested value only.",
        role="You are a precise assistant who returns exactly the value a program asked for.",
        guidelines=_WRITER_GUIDELINES,
        instructions="Answer the TASK below. The DESIRED TYPE block says what kind of value "
        "the caller's program expects.",
        output_format="Answer with the value only, in the form the DESIRED TYPE block "
        "describes: no explanation, no units unless asked, no markdown.",
    )
)

# GASL PROCESS and ANALYZE: the step's instruction, data excerpt and answer schema travel as
# three delimited parts of one STEP group; the executor validates the JSON against the schema.
GASL_PROCESS = TEMPLATES.register(
    PromptTemplate(
        name="gasl_process",
        system="You transform graph data and answer with JSON only.",
        role="You transform items of a knowledge-graph analysis, using only the data given.",
        guidelines=[
            "Do what the INSTRUCTION part asks with the items of the DATA part.",
            "Carry the `source_ids` of the input items into every derived item.",
        ],
        instructions="Apply the INSTRUCTION to the DATA.",
        output_format="Answer with one JSON object matching the ANSWER SCHEMA, nothing else.",
    )
)

GASL_ANALYZE = TEMPLATES.register(
    PromptTemplate(
        name="gasl_analyze",
        system="You analyse findings and answer with JSON only.",
        role="You analyse the accumulated findings of a knowledge-graph analysis.",
        guidelines=[
            "Base the answer only on the FINDINGS part, and say why.",
            "Cite the ids or source ids your answer rests on in `evidence`.",
        ],
        instructions="Answer the INSTRUCTION about the FINDINGS.",
        output_format="Answer with one JSON object matching the ANSWER SCHEMA, nothing else.",
    )
)

# The planner: the task plan and the HDT rounds. services/planner parses what these ask for;
# its package docstring documents the JSON shapes.
TASK_PLAN = TEMPLATES.register(
    PromptTemplate(
        name="task_plan",
        system="You plan work and answer with JSON only.",
        role="You are a task planner. You split a request into a short, ordered list of tasks.",
        guidelines=[
            "Use as few tasks as the request needs, usually one or two.",
            "kind graph_analysis: a question answered by querying the knowledge graph; only "
            "when the GRAPH block describes one.",
            "kind generation: writing a result from the request and what earlier tasks found; "
            "at most one, and last.",
            "Every task inherits the job's INTENT. Give a task dataType, expectedFormats or "
            "qualityRequirements only where it needs something different.",
            "Each objective says concretely what the task must find or write.",
        ],
        instructions="Plan the tasks for the user text.",
        output_format=(
            "Answer with one JSON object and nothing else:\n"
            '{"overview": "one sentence", "tasks": [{"id": "t1", "objective": "...", '
            '"kind": "graph_analysis|generation", "dataType": "optional", '
            '"expectedFormats": ["optional"], "qualityRequirements": {"accuracyThreshold": '
            '0.9, "completenessThreshold": 0.8}}]}'
        ),
        examples=[
            Example(
                user_text="Which people co-wrote reports with Robin Lee? Give me a CSV file.",
                answer='{"overview": "Find Robin Lee\'s co-authors, then write the CSV.", '
                '"tasks": [{"id": "t1", "objective": "List the people who share a report '
                'with ROBIN LEE", "kind": "graph_analysis", "expectedFormats": []}, {"id": '
                '"t2", "objective": "Write the co-authors as CSV, one name per row", "kind": '
                '"generation", "expectedFormats": ["csv"]}]}',
            )
        ],
    )
)

# Compact on purpose: a whole round prompt has to fit a 2048-token local model.
GASL_CHEAT_SHEET = [
    'FIND nodes WHERE entity_type = "PERSON" LIMIT 50 AS people',
    'FIND paths FROM "ROBIN LEE" TO (entity_type = "ORGANIZATION") MAX_LENGTH 2 AS links',
    'NEIGHBORS ${people} VIA "author" DEPTH 1 AS near',
    'SELECT people WHERE description CONTAINS "CDC" AS cdc',
    "COUNT people AS n",
    "AGGREGATE people BY source_ids WITH COLLECT OF id AS by_report",
    "RANK by_report BY value DESC LIMIT 5 AS top",
    "DECLARE found AS LIST",
    "UPDATE found WITH people",
    'ANALYZE found USING "question" AS verdict',
    'ON EMPTY people THEN FIND nodes WHERE id CONTAINS "LEE" AS people',
    "Operators: = != > >= < <= IN CONTAINS STARTS_WITH AND OR NOT",
    "COMPLETE: ${people} is all of people's rows as the answer; ${people.id} one field of each",
]
# For models with room for it: the rest of GASL (docs/GASL.md, "Commands").
GASL_MORE_COMMANDS = [
    'GRAPHWALK FROM "ROBIN LEE" DIRECTION both FOLLOW "author", "funded_by" DEPTH 2 AS reach',
    "SUBGRAPH FROM ${people} DEPTH 1 LIMIT 200 AS around",
    'GRAPHCONNECT ${people} AND (entity_type = "ORGANIZATION") MAX_LENGTH 3 AS links',
    "JOIN people WITH reports ON source_ids = id AS pairs",
    "MERGE near_a, near_b ON id AS either",
    "COMPARE near_a WITH near_b AS overlap",
    "ADD_FIELD people FIELD reports = LEN source_ids AS counted",
    'ADD_FIELD people FIELD role USING "the person\'s job, one or two words" AS roles',
    'CLASSIFY reports INTO "surveillance", "trial" USING "the kind of study" AS kinds',
    'PROCESS people USING "pair people who co-wrote a report" AS pairs',
    "SHOW people FIELDS who=id, entity_type LIMIT 10",
    'CREATE_NODES FROM findings ID name TYPE "FINDING" AS made',
    'CREATE_EDGES FROM pairs SOURCE id TARGET partner RELATION "cited_with" AS linked',
    "CREATE_GROUPS FROM people BY entity_type AS groups",
]

HDT_ROUND = TEMPLATES.register(
    PromptTemplate(
        name="hdt_round",
        system="You analyse a knowledge graph with GASL and answer with JSON only.",
        role="You are a graph analyst. Each round you judge the last GASL results, then "
        "answer or plan the next test of a hypothesis.",
        guidelines={
            "GASL": GASL_CHEAT_SHEET,
            "RULES": [
                "One command per string. Use the types and attributes listed under GRAPH.",
                "LAST RESULTS: fix an error as its message says; pivot after empty; refine "
                "after partial.",
                "complete when the evidence answers the QUESTION. When the answer is rows a "
                'variable or state key holds, name it, never copy rows: "answer": "${films}" '
                '(all rows, whole, shown or not) or "${films.id}" (one field of each row). '
                "No rounds left: complete.",
            ],
        },
        references={"MORE GASL": GASL_MORE_COMMANDS},
        instructions="Judge the LAST RESULTS and choose the next step for the QUESTION.",
        output_format=(
            "Answer with one JSON object and nothing else:\n"
            '{"evaluation": "...", "decision": "continue|refine|pivot|complete", '
            '"hypothesis": "...", "answer": null, "next_actions": [{"action": "continue", '
            '"confidence": 0.8, "plan": {"why": "...", "commands": ["..."]}}]}'
        ),
        examples=[
            Example(
                user_text="QUESTION: How many people are in the graph?",
                answer='{"evaluation": "Nothing has run yet.", "decision": "continue", '
                '"hypothesis": "PERSON nodes are the people.", "answer": null, '
                '"next_actions": [{"action": "continue", "confidence": 0.9, "plan": {"why": '
                '"count people", "commands": ["FIND nodes WHERE entity_type = \\"PERSON\\" AS '
                'people", "COUNT people AS n"]}}]}',
            ),
            Example(
                user_text="QUESTION: Which people wrote with Robin Lee?\nLAST RESULTS:\n"
                "1. [success] NEIGHBORS ${lee} DEPTH 1 AS coauthors -> 34 as coauthors\n"
                "   fields: id, entity_type\n"
                "   33 more rows not shown; name all 34 as ${coauthors}\n"
                '   rows: {"id": "BRIANA MORELAND", "entity_type": "PERSON"}',
                answer='{"evaluation": "The 34 neighbours are the co-authors.", "decision": '
                '"complete", "hypothesis": "Co-authors are Lee\'s neighbours.", "answer": '
                '"${coauthors.id}"}',
            ),
        ],
    )
)

# The round prompt for a small model on a question whose entities were linked to the graph:
# it walks relations from them, so it is shown the walk and nothing else of GASL, and the
# GRAPH part lists only the names it may use (services.planner.schema_grammar).
HDT_ROUND_FOCUSED = TEMPLATES.register(
    PromptTemplate(
        name="hdt_round_focused",
        system="You answer questions about a knowledge graph with GASL and answer with JSON.",
        role="You answer the QUESTION by walking the graph's relations from the entity it "
        "names, one walk per relation, then naming the variable that holds the answer.",
        guidelines={
            "GASL": [
                "NEIGHBORS 'id' VIA 'relation' AS step1 : the nodes joined to 'id' by relation",
                "NEIGHBORS ${step1} VIA 'relation' AS step2 : one more walk from step1's nodes",
                "SELECT step2 WHERE id != 'id' AS answer : step2 without the named entity",
                "SELECT step1 WHERE entity_type = 'TYPE' AS answer : only step1's nodes of a "
                "type the QUESTION asks for (Types to keep, under GRAPH)",
                "COMPLETE: ${step2} : the answer is every node step2 holds",
            ],
            "RULES": [
                "Start at the id under GRAPH. Use only relations listed under GRAPH.",
                "LAST RESULTS has rows: the plan worked. Answer COMPLETE: ${its last variable}.",
                "Never run the same plan twice.",
            ],
        },
        instructions="If LAST RESULTS holds rows, answer COMPLETE: ${variable}. Else plan the "
        "walks for the QUESTION.",
        output_format="COMPLETE: ${step1} (when LAST RESULTS holds rows), or "
        '{"decision": "continue", "commands": ["NEIGHBORS ..."]}',
    )
)
