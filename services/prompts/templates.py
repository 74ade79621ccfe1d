"""Every prompt postel sends, as data, in this one place.

Add a template by registering it on `TEMPLATES`; build it with
`build_prompt(TEMPLATES.get(name), capability, user_text=..., context=...)`."""

from __future__ import annotations

from services.prompts.registry import TemplateRegistry
from services.prompts.template import Example, OutputField, PromptTemplate

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
