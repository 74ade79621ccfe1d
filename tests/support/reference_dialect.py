# ruff: noqa: E501  (a table of command pairs, one pair a line where it fits)
"""232 commands written in the reference implementation's dialect, each with the canonical
GASL it means, and the forms postel refuses with the hint that names the canonical way (199
from the first sample, and the families outside samples found refused since: unquoted
values holding initials, years and punctuation, ADD_FIELD of a plan's variable, COUNT ...
where / group by, FIND paths filters without colons, ON EMPTY do of the command before,
SET, AGGREGATE without OF, SUBGRAPH ... include).

Every command runs after `SETUP` (canonical commands that make the variables and state keys
the corpus names) on the MMWR demo graph; tests/gasl/test_gasl_reference_dialect.py checks
that each accepted one parses to the same command as its canonical form and gives the same
records. A text may hold more than one command (`ON EMPTY do ...` guards the one before it).
"""

from __future__ import annotations

from typing import NamedTuple

SETUP = [
    'FIND nodes WHERE entity_type = "PERSON" LIMIT 40 AS people',
    'FIND nodes WHERE entity_type = "ORGANIZATION" LIMIT 20 AS orgs',
    "FIND edges WHERE weight >= 9 LIMIT 30 AS strong",
    'FIND nodes WHERE id = "ROBIN LEE" AS robin',
    'FIND nodes WHERE id = "JANSSEN COVID-19 VACCINE" AS vaccine',
    "FIND nodes LIMIT 300 AS sample",
    "AGGREGATE sample BY entity_type WITH COUNT AS per_type",
    "COUNT people AS n_people",
    'FIND nodes WHERE entity_type = "NOBODY" AS nobody',
    "DECLARE found AS LIST",
    "DECLARE tally AS COUNTER",
]


class Form(NamedTuple):
    written: str
    canonical: str


class Refused(NamedTuple):
    written: str
    hint: str  # a part of the hint the refusal gives


def _find_pairs() -> list[Form]:
    types = [
        "PERSON", "ORGANIZATION", "INTERVENTION", "RECOMMENDATION", "DATASET", "PROGRAM",
        "PUBLICATION", "LOCATION",
    ]  # fmt: skip
    forms = [
        Form(f"FIND nodes with entity_type={t} AS n_{i}", f'FIND nodes WHERE entity_type = "{t}" AS n_{i}')
        for i, t in enumerate(types)
    ]  # fmt: skip
    forms += [
        Form("FIND nodes with entity_type=TIME PERIOD LIMIT 6 AS periods",
             'FIND nodes WHERE entity_type = "TIME PERIOD" LIMIT 6 AS periods'),
        Form("FIND nodes with entity_type=SURVEILLANCE INDICATOR AS indicators",
             'FIND nodes WHERE entity_type = "SURVEILLANCE INDICATOR" AS indicators'),
        Form("FIND nodes with entity_type=PERSON and id != ROBIN LEE LIMIT 8 AS not_robin",
             'FIND nodes WHERE entity_type = "PERSON" AND id != "ROBIN LEE" LIMIT 8 AS not_robin'),
        Form("FIND edges with weight < 2 AS light", "FIND edges WHERE weight < 2 AS light"),
        Form("FIND nodes with id=${robin} AS again", "FIND nodes WHERE id = ${robin} AS again"),
        Form("FIND nodes with entity_type=STATISTICAL MEASURE AS measures",
             'FIND nodes WHERE entity_type = "STATISTICAL MEASURE" AS measures'),
        Form("FIND nodes with entity_type=MEDICAL CODE LIMIT 10 AS codes",
             'FIND nodes WHERE entity_type = "MEDICAL CODE" LIMIT 10 AS codes'),
        Form("FIND nodes with entity_type=PERSON and id=ROBIN LEE AS lee",
             'FIND nodes WHERE entity_type = "PERSON" AND id = "ROBIN LEE" AS lee'),
        Form("FIND nodes with entity_type: PERSON LIMIT 5 AS five",
             'FIND nodes WHERE entity_type = "PERSON" LIMIT 5 AS five'),
        Form('FIND nodes with id="CDC" AS cdc', 'FIND nodes WHERE id = "CDC" AS cdc'),
        Form("FIND nodes with entity_type != PERSON LIMIT 30 AS others",
             'FIND nodes WHERE entity_type != "PERSON" LIMIT 30 AS others'),
        Form("FIND edges with weight>=9 AS heavy", "FIND edges WHERE weight >= 9 AS heavy"),
        Form("FIND edges with weight=8 and source=BRIANA MORELAND AS from_briana",
             'FIND edges WHERE weight = 8 AND source = "BRIANA MORELAND" AS from_briana'),
        Form("FIND nodes with entity_type=SURVEILLANCE SYSTEM and id=VAERS AS vaers",
             'FIND nodes WHERE entity_type = "SURVEILLANCE SYSTEM" AND id = "VAERS" AS vaers'),
        Form("find nodes with entity_type=LOCATION limit 3 as places",
             'FIND nodes WHERE entity_type = "LOCATION" LIMIT 3 AS places'),
    ]  # fmt: skip
    return forms


FIND_WITHOUT_AS = [
    Form("FIND nodes with entity_type=PERSON", 'FIND nodes WHERE entity_type = "PERSON" AS found_nodes'),
    Form('FIND nodes WHERE entity_type = "DATASET" LIMIT 4',
         'FIND nodes WHERE entity_type = "DATASET" LIMIT 4 AS found_nodes'),
    Form("FIND edges with weight>=9", "FIND edges WHERE weight >= 9 AS found_edges"),
    Form("FIND paths with source_filter: id=ROBIN LEE target_filter: entity_type=ORGANIZATION max_length 2 AS links",
         'FIND paths FROM (id = "ROBIN LEE") TO (entity_type = "ORGANIZATION") MAX_LENGTH 2 AS links'),
    Form("FIND paths with source_filter: id=BRIANA MORELAND, target_filter: id=ROBIN LEE",
         'FIND paths FROM (id = "BRIANA MORELAND") TO (id = "ROBIN LEE") AS found_paths'),
    Form("FIND nodes with entity_type=PROGRAM LIMIT 2", 'FIND nodes WHERE entity_type = "PROGRAM" LIMIT 2 AS found_nodes'),
    Form("FIND nodes", "FIND nodes AS found_nodes"),
]  # fmt: skip

CANONICAL_LOWER_CASE = [
    Form('find nodes where entity_type = "PROGRAM" limit 5 as programs',
         'FIND nodes WHERE entity_type = "PROGRAM" LIMIT 5 AS programs'),
    Form("select people fields id, entity_type as slim", "SELECT people FIELDS id, entity_type AS slim"),
    Form('select people where description contains "CDC" as cdc_people',
         'SELECT people WHERE description CONTAINS "CDC" AS cdc_people'),
    Form("show people limit 3", "SHOW people LIMIT 3"),
    Form("SHOW people fields who=id limit 2", "SHOW people FIELDS who=id LIMIT 2"),
    Form("declare seen as list", "DECLARE seen AS LIST"),
    Form("join people with strong on id = source as authored", "JOIN people WITH strong ON id = source AS authored"),
    Form("compare people with orgs on id as overlap", "COMPARE people WITH orgs ON id AS overlap"),
    Form("merge people, orgs as both", "MERGE people, orgs AS both"),
    Form('neighbors robin via "co-author" as circle', 'NEIGHBORS robin VIA "co-author" AS circle'),
]  # fmt: skip

INSTRUCTIONS = [
    Form("PROCESS people with instruction: extract first names AS first",
         'PROCESS people USING "extract first names" AS first'),
    Form("PROCESS people with instruction: first; names AS y", 'PROCESS people USING "first; names" AS y'),
    Form("PROCESS people with instruction: write each pair as 'A & B' AS pairs",
         "PROCESS people USING \"write each pair as 'A & B'\" AS pairs"),
    Form("PROCESS people with instruction: extract the first name and store as first_name AS names",
         'PROCESS people USING "extract the first name and store as first_name" AS names'),
    Form('PROCESS people with instruction: "pair co-authors" AS coauthors',
         'PROCESS people USING "pair co-authors" AS coauthors'),
    Form("PROCESS orgs using instruction: the country of each, or unknown AS countries",
         'PROCESS orgs USING "the country of each, or unknown" AS countries'),
    Form("PROCESS strong with instruction: summarise each relation in five words AS gist",
         'PROCESS strong USING "summarise each relation in five words" AS gist'),
    Form("ANALYZE people with instruction: which institutions dominate? AS verdict",
         'ANALYZE people USING "which institutions dominate?" AS verdict'),
    Form("ANALYZE per_type using instruction: what kind of graph is this AS kind",
         'ANALYZE per_type USING "what kind of graph is this" AS kind'),
    Form("CLASSIFY people with instruction: the kind of study AS kinds",
         'CLASSIFY people USING "the kind of study" AS kinds'),
    Form("CLASSIFY orgs with the sector of each AS sectors", 'CLASSIFY orgs USING "the sector of each" AS sectors'),
    Form("CLASSIFY people by role in the report AS roles", 'CLASSIFY people USING "role in the report" AS roles'),
    Form("process people with instruction: list surnames as surnames",
         'PROCESS people USING "list surnames" AS surnames'),
    Form("PROCESS people with instruction: name; role; employer AS cards",
         'PROCESS people USING "name; role; employer" AS cards'),
    Form('PROCESS orgs with instruction: say "public" or "private" AS kinds',
         'PROCESS orgs USING "say \\"public\\" or \\"private\\"" AS kinds'),
    Form("PROCESS people using instruction: count of reports (per person) AS tallies",
         'PROCESS people USING "count of reports (per person)" AS tallies'),
]  # fmt: skip

INSTRUCTIONS_WITHOUT_AS = [
    Form("PROCESS people with instruction: extract the first name and store as first_name",
         'PROCESS people USING "extract the first name and store as first_name" AS people_processed'),
    Form("PROCESS orgs with instruction: the acronym of each", 'PROCESS orgs USING "the acronym of each" AS orgs_processed'),
    Form("PROCESS strong with instruction: who cites whom", 'PROCESS strong USING "who cites whom" AS strong_processed'),
    Form("CLASSIFY people with instruction: the kind of study", 'CLASSIFY people USING "the kind of study" AS people_classified'),
    Form("CLASSIFY orgs with instruction: public or private", 'CLASSIFY orgs USING "public or private" AS orgs_classified'),
    Form("ANALYZE people with instruction: who leads", 'ANALYZE people USING "who leads" AS people_analysis'),
]  # fmt: skip

COUNTS = [
    Form("COUNT people group by entity_type AS n", "AGGREGATE people BY entity_type WITH COUNT AS n"),
    Form("COUNT sample group by entity_type AS by_type", "AGGREGATE sample BY entity_type WITH COUNT AS by_type"),
    Form("COUNT strong group by source AS per_source", "AGGREGATE strong BY source WITH COUNT AS per_source"),
    Form("COUNT sample group by entity_type", "AGGREGATE sample BY entity_type WITH COUNT AS sample_count"),
    Form("COUNT sample field entity_type AS kinds", "AGGREGATE sample BY entity_type WITH COUNT AS kinds"),
    Form("COUNT strong field weight AS weights", "AGGREGATE strong BY weight WITH COUNT AS weights"),
    Form("COUNT people field entity_type", "AGGREGATE people BY entity_type WITH COUNT AS people_count"),
    Form("COUNT orgs by entity_type AS org_kinds", "AGGREGATE orgs BY entity_type WITH COUNT AS org_kinds"),
    Form("COUNT FIND nodes with entity_type=PERSON AS n",
         'FIND nodes WHERE entity_type = "PERSON" AS n_items; COUNT n_items AS n'),
    Form("COUNT FIND nodes with entity_type=DATASET AS datasets",
         'FIND nodes WHERE entity_type = "DATASET" AS datasets_items; COUNT datasets_items AS datasets'),
    Form("COUNT FIND edges with weight>=9 AS heavy",
         "FIND edges WHERE weight >= 9 AS heavy_items; COUNT heavy_items AS heavy"),
    Form("COUNT people where description is not null AS described",
         "COUNT people WHERE (description != null AND description = description) AS described"),
    Form("COUNT people where clusters is null AS unclustered",
         "COUNT people WHERE (clusters = null OR NOT clusters = clusters) AS unclustered"),
    Form("FIND nodes with entity_type=PERSON and description is not null AS described",
         'FIND nodes WHERE entity_type = "PERSON" AND (description != null AND description = description) AS described'),
    Form("SELECT strong WHERE keywords is null AS bare", "SELECT strong WHERE (keywords = null OR NOT keywords = keywords) AS bare"),
    Form("COUNT people where ok = true AS n_ok", "COUNT people WHERE ok = true AS n_ok"),
    Form("COUNT people group by entity_type", "AGGREGATE people BY entity_type WITH COUNT AS people_count"),
    Form("COUNT FIND nodes with entity_type=PROGRAM", 'FIND nodes WHERE entity_type = "PROGRAM" AS found_nodes_count_items; COUNT found_nodes_count_items AS found_nodes_count'),
    Form("COUNT orgs where description is not null AS described_orgs",
         "COUNT orgs WHERE (description != null AND description = description) AS described_orgs"),
]  # fmt: skip

RANKS = [
    Form("RANK per_type BY value order desc LIMIT 3 AS top", "RANK per_type BY value DESC LIMIT 3 AS top"),
    Form("RANK per_type BY value order asc AS bottom", "RANK per_type BY value ASC AS bottom"),
    Form("RANK strong by weight order desc limit 5 AS heaviest", "RANK strong BY weight DESC LIMIT 5 AS heaviest"),
    Form("RANK people by id order asc LIMIT 4 AS alpha", "RANK people BY id ASC LIMIT 4 AS alpha"),
    Form("RANK per_type BY value order desc", "RANK per_type BY value DESC AS per_type_ranked"),
    Form("RANK strong BY weight DESC LIMIT 2", "RANK strong BY weight DESC LIMIT 2 AS strong_ranked"),
]  # fmt: skip

GUARDS = [
    Form("ON EMPTY nobody do COUNT people AS c", "ON EMPTY nobody THEN COUNT people AS c"),
    Form("ON EMPTY people do COUNT people AS c", "ON EMPTY people THEN COUNT people AS c"),
    Form("ON ERROR people do COUNT orgs AS c", "ON ERROR people THEN COUNT orgs AS c"),
    Form("ON PARTIAL strong do COUNT strong AS c", "ON PARTIAL strong THEN COUNT strong AS c"),
    Form("ON empty nobody do FIND nodes with entity_type=PERSON LIMIT 3 AS nobody",
         'ON EMPTY nobody THEN FIND nodes WHERE entity_type = "PERSON" LIMIT 3 AS nobody'),
    Form("ON EMPTY nobody do FIND nodes with entity_type=PERSON AS nobody",
         'ON EMPTY nobody THEN FIND nodes WHERE entity_type = "PERSON" AS nobody'),
    Form("ON EMPTY nobody do COUNT sample group by entity_type AS kinds",
         "ON EMPTY nobody THEN AGGREGATE sample BY entity_type WITH COUNT AS kinds"),
    Form("ON EMPTY nobody do RANK per_type BY value order desc LIMIT 2 AS top",
         "ON EMPTY nobody THEN RANK per_type BY value DESC LIMIT 2 AS top"),
    Form('FIND nodes WHERE entity_type = "AUTHOR" AS authors\nON empty do FIND nodes with entity_type=PERSON AS authors',
         'FIND nodes WHERE entity_type = "AUTHOR" AS authors\nON EMPTY authors THEN FIND nodes WHERE entity_type = "PERSON" AS authors'),
    Form('FIND nodes WHERE entity_type = "FUNDER" AS funders; ON EMPTY do COUNT orgs AS n',
         'FIND nodes WHERE entity_type = "FUNDER" AS funders; ON EMPTY funders THEN COUNT orgs AS n'),
    Form("ON SCHEMA_MISMATCH people do COUNT people AS c", "ON SCHEMA_MISMATCH people THEN COUNT people AS c"),
    Form("COUNT people AS k\nON error do COUNT orgs AS k2", "COUNT people AS k\nON ERROR k THEN COUNT orgs AS k2"),
]  # fmt: skip

UPDATES = [
    Form("UPDATE found WITH people operation: append", "UPDATE found WITH people MERGE"),
    Form("UPDATE found WITH people operation: merge", "UPDATE found WITH people MERGE"),
    Form("UPDATE found WITH people operation: add", "UPDATE found WITH people MERGE"),
    Form("UPDATE found WITH orgs operation: union", "UPDATE found WITH orgs MERGE"),
    Form("UPDATE found WITH people operation: replace", "UPDATE found WITH people REPLACE"),
    Form("UPDATE found WITH orgs operation: overwrite", "UPDATE found WITH orgs REPLACE"),
    Form("UPDATE found WITH orgs mode: set", "UPDATE found WITH orgs REPLACE"),
    Form("UPDATE tally WITH people operation: add", "UPDATE tally WITH people MERGE"),
    Form('UPDATE found WITH people operation: filter where description contains "CDC"',
         'SELECT people WHERE description CONTAINS "CDC" AS people_filtered; UPDATE found WITH people_filtered REPLACE'),
    Form("UPDATE found WITH strong where weight >= 10",
         "SELECT strong WHERE weight >= 10 AS strong_filtered; UPDATE found WITH strong_filtered REPLACE"),
]  # fmt: skip

REQUIRES = [
    Form("REQUIRE people", "REQUIRE EXISTS people"),
    Form("REQUIRE orgs", "REQUIRE EXISTS orgs"),
    Form("REQUIRE missing_var", "REQUIRE EXISTS missing_var"),
    Form("ASSERT people count > 30", "ASSERT LEN ${people} > 30"),
    Form("ASSERT people count > 300", "ASSERT LEN ${people} > 300"),
    Form("REQUIRE orgs size >= 1", "ASSERT LEN ${orgs} >= 1"),
    Form("ASSERT strong length < 100", "ASSERT LEN ${strong} < 100"),
    Form("REQUIRE people.count = 40", "ASSERT LEN ${people} = 40"),
    Form("REQUIRE nobody len > 0", "ASSERT LEN ${nobody} > 0"),
    Form("REQUIRE people has field: description", "REQUIRE EXISTS ${people.description}"),
    Form("ASSERT people has field source_ids", "REQUIRE EXISTS ${people.source_ids}"),
    Form("REQUIRE people has field: nickname", "REQUIRE EXISTS ${people.nickname}"),
    Form('REQUIRE n_people < 100 "too many people"', "ASSERT ${n_people} < 100"),
    Form('ASSERT n_people >= 50 "need fifty"', "ASSERT ${n_people} >= 50"),
]  # fmt: skip

TRIES = [
    Form("TRY COUNT nobody_at_all AS n CATCH COUNT people AS m", "TRY COUNT nobody_at_all AS n CATCH ANY COUNT people AS m END"),
    Form("TRY COUNT people AS n CATCH COUNT orgs AS m END", "TRY COUNT people AS n CATCH ANY COUNT orgs AS m END"),
    Form("TRY\nCOUNT ghost AS n\nCATCH\nCOUNT orgs AS m", "TRY\nCOUNT ghost AS n\nCATCH ANY\nCOUNT orgs AS m END"),
    Form("TRY COUNT ghost AS n CATCH FIND nodes with entity_type=PERSON LIMIT 2 AS m",
         'TRY COUNT ghost AS n CATCH ANY FIND nodes WHERE entity_type = "PERSON" LIMIT 2 AS m END'),
    Form("TRY COUNT ghost AS n CATCH COUNT people AS m FINALLY COUNT orgs AS k",
         "TRY COUNT ghost AS n CATCH ANY COUNT people AS m FINALLY COUNT orgs AS k END"),
]  # fmt: skip

WALKS = [
    Form("GRAPHWALK from robin follow co-author depth 2",
         'GRAPHWALK FROM robin FOLLOW "co-author" DEPTH 2 AS robin_walk'),
    Form("GRAPHWALK from robin follow any AS w", "GRAPHWALK FROM robin AS w"),
    Form("GRAPHWALK from robin follow relationship depth 2", "GRAPHWALK FROM robin DEPTH 2 AS robin_walk"),
    Form("GRAPHWALK from vaccine follow relationships depth 1 AS around", "GRAPHWALK FROM vaccine DEPTH 1 AS around"),
    Form("GRAPHWALK from vaccine follow all depth 1", "GRAPHWALK FROM vaccine DEPTH 1 AS vaccine_walk"),
    Form("GRAPHWALK from robin follow co-author, affiliated depth 2 limit 10 AS w",
         'GRAPHWALK FROM robin FOLLOW "co-author", "affiliated" DEPTH 2 LIMIT 10 AS w'),
    Form('GRAPHWALK from robin follow "co-author" or report depth 1',
         'GRAPHWALK FROM robin FOLLOW "co-author", "report" DEPTH 1 AS robin_walk'),
    Form("GRAPHWALK from people follow vaccine, report depth 2",
         'GRAPHWALK FROM people FOLLOW "vaccine", "report" DEPTH 2 AS people_walk'),
    Form('GRAPHWALK FROM robin FOLLOW "co-author" DEPTH 1 LIMIT 20',
         'GRAPHWALK FROM robin FOLLOW "co-author" DEPTH 1 LIMIT 20 AS robin_walk'),
    Form("GRAPHWALK from robin direction both follow any depth 2 AS w2", "GRAPHWALK FROM robin DIRECTION both DEPTH 2 AS w2"),
    Form("SUBGRAPH around robin radius 1", "SUBGRAPH FROM robin DEPTH 1 AS robin_subgraph"),
    Form("SUBGRAPH around vaccine radius 1 AS near", "SUBGRAPH FROM vaccine DEPTH 1 AS near"),
    Form("SUBGRAPH around robin radius 2", "SUBGRAPH FROM robin DEPTH 2 AS robin_subgraph"),
    Form("SUBGRAPH around people radius 1 AS around_people", "SUBGRAPH FROM people DEPTH 1 AS around_people"),
    Form("GRAPHCONNECT robin and orgs via co-author AS circle", 'GRAPHCONNECT robin AND orgs VIA "co-author" AS circle'),
    Form("GRAPHCONNECT vaccine to sample via vaccine max_length 1 AS doses", 'GRAPHCONNECT vaccine TO sample VIA "vaccine" MAX_LENGTH 1 AS doses'),
    Form("GRAPHCONNECT robin , people via co-author max_length 2 AS coauthors", 'GRAPHCONNECT robin, people VIA "co-author" MAX_LENGTH 2 AS coauthors'),
    Form("GRAPHCONNECT robin to people via co-author AS links", 'GRAPHCONNECT robin TO people VIA "co-author" AS links'),
    Form("GRAPHCONNECT people and orgs via author max_length 2 AS ties",
         'GRAPHCONNECT people AND orgs VIA "author" MAX_LENGTH 2 AS ties'),
    Form("GRAPHCONNECT robin with vaccine via report AS linked", 'GRAPHCONNECT robin WITH vaccine VIA "report" AS linked'),
    Form("GRAPHCONNECT people with orgs via report limit 5 AS via_paths",
         'GRAPHCONNECT people WITH orgs VIA "report" LIMIT 5 AS via_paths'),
]  # fmt: skip

ADD_FIELDS = [
    Form("ADD_FIELD people field: n = LEN source_ids AS counted", "ADD_FIELD people FIELD n = LEN source_ids AS counted"),
    Form('ADD_FIELD people field: kind = "author" AS kinded', 'ADD_FIELD people FIELD kind = "author" AS kinded'),
    Form("ADD_FIELD strong field: heavy = weight >= 9.5 AS flagged", "ADD_FIELD strong FIELD heavy = weight >= 9.5 AS flagged"),
    Form("ADD_FIELD people field: total = ${n_people} AS with_total", "ADD_FIELD people FIELD total = ${n_people} AS with_total"),
    Form("ADD_FIELD people field: flag = true AS flagged", "ADD_FIELD people FIELD flag = true AS flagged"),
    Form('ADD_FIELD people field: cdc = description CONTAINS "CDC" AS marked',
         'ADD_FIELD people FIELD cdc = description CONTAINS "CDC" AS marked'),
    Form("ADD_FIELD people field: n = LEN source_ids", "ADD_FIELD people FIELD n = LEN source_ids AS people_with_n"),
    Form('ADD_FIELD people field: kind = "author"', 'ADD_FIELD people FIELD kind = "author" AS people_with_kind'),
    Form("ADD_FIELD strong field: heavy = weight >= 9.5", "ADD_FIELD strong FIELD heavy = weight >= 9.5 AS strong_with_heavy"),
    Form("ADD_FIELD people field: total = ${n_people}", "ADD_FIELD people FIELD total = ${n_people} AS people_with_total"),
    Form("ADD_FIELD orgs field: flag = false", "ADD_FIELD orgs FIELD flag = false AS orgs_with_flag"),
    Form("ADD_FIELD orgs field: size = LEN description", "ADD_FIELD orgs FIELD size = LEN description AS orgs_with_size"),
    Form('ADD_FIELD people field: cdc = description CONTAINS "CDC"',
         'ADD_FIELD people FIELD cdc = description CONTAINS "CDC" AS people_with_cdc'),
    Form("ADD_FIELD per_type field: many = value > 10", "ADD_FIELD per_type FIELD many = value > 10 AS per_type_with_many"),
    Form("ADD_FIELD people field: none_yet = null", "ADD_FIELD people FIELD none_yet = null AS people_with_none_yet"),
]  # fmt: skip

CREATES = [
    Form("CREATE_NODES from per_type with type: AUTHOR, id: key", 'CREATE_NODES FROM per_type ID key TYPE "AUTHOR" AS per_type_nodes'),
    Form("CREATE_NODES from per_type with type: KIND, id: key AS kinds",
         'CREATE_NODES FROM per_type ID key TYPE "KIND" AS kinds'),
    Form('CREATE_NODES from orgs with type: "FUNDER"', 'CREATE_NODES FROM orgs TYPE "FUNDER" AS orgs_nodes'),
    Form("CREATE_NODES from per_type with id_field: key", "CREATE_NODES FROM per_type ID key AS per_type_nodes"),
    Form("CREATE_EDGES from strong with type: cites", 'CREATE_EDGES FROM strong SOURCE source TARGET target RELATION "cites" AS strong_edges'),
    Form("CREATE_EDGES from strong with relationship: linked AS links",
         'CREATE_EDGES FROM strong SOURCE source TARGET target RELATION "linked" AS links'),
    Form("CREATE_EDGES from strong with source: target, target: source, type: reversed",
         'CREATE_EDGES FROM strong SOURCE target TARGET source RELATION "reversed" AS strong_edges'),
    Form("CREATE_GROUPS from people with field: entity_type", "CREATE_GROUPS FROM people BY entity_type AS people_groups"),
    Form("CREATE_GROUPS from sample with by: entity_type AS groups", "CREATE_GROUPS FROM sample BY entity_type AS groups"),
    Form("CREATE_NODES from orgs with entity_type: SPONSOR AS sponsors", 'CREATE_NODES FROM orgs TYPE "SPONSOR" AS sponsors'),
    Form("CREATE_GROUPS from orgs with group_by: entity_type", "CREATE_GROUPS FROM orgs BY entity_type AS orgs_groups"),
]  # fmt: skip

AGGREGATES = [
    Form("AGGREGATE sample by entity_type with count", "AGGREGATE sample BY entity_type WITH COUNT AS sample_aggregate"),
    Form("AGGREGATE strong by source with count", "AGGREGATE strong BY source WITH COUNT AS strong_aggregate"),
    Form("AGGREGATE strong by source with avg weight AS mean_weight", "AGGREGATE strong BY source WITH AVG OF weight AS mean_weight"),
    Form("AGGREGATE strong with max(weight) AS top_weight", "AGGREGATE strong WITH MAX OF weight AS top_weight"),
    Form("AGGREGATE strong by target with sum weight", "AGGREGATE strong BY target WITH SUM OF weight AS strong_aggregate"),
    Form("AGGREGATE people by entity_type with collect id AS ids", "AGGREGATE people BY entity_type WITH COLLECT OF id AS ids"),
    Form("JOIN strong WITH sample ON source/id AS authored", "JOIN strong WITH sample ON source = id AS authored"),
    Form("JOIN strong with sample on target/id AS cited", "JOIN strong WITH sample ON target = id AS cited"),
    Form("SHOW people limit 3", "SHOW people LIMIT 3"),
    Form("JOIN people with people on id AS self", "JOIN people WITH people ON id AS self"),
    Form("COMPARE people with orgs on id AS c", "COMPARE people WITH orgs ON id AS c"),
    Form("AGGREGATE strong by source with min weight AS lightest", "AGGREGATE strong BY source WITH MIN OF weight AS lightest"),
    Form("AGGREGATE strong with avg(weight)", "AGGREGATE strong WITH AVG OF weight AS strong_aggregate"),
    Form("GRAPHCONNECT people to vaccine via vaccine max_length 3 AS reach",
         'GRAPHCONNECT people TO vaccine VIA "vaccine" MAX_LENGTH 3 AS reach'),
    Form("RANK people by id order desc", "RANK people BY id DESC AS people_ranked"),
]  # fmt: skip

# A value written without quotes runs to the next pair's `and` or the closing words, whatever
# it holds: initials, years, commas, parentheses, `%`, `/`, an inner AND or AS.
NAMES_UNQUOTED = [
    Form("FIND nodes with entity_type=PERSON and id=ROCHELLE P. WALENSKY AS director",
         'FIND nodes WHERE entity_type = "PERSON" AND id = "ROCHELLE P. WALENSKY" AS director'),
    Form("FIND nodes with id=JEFFREY D. AS jeffrey", 'FIND nodes WHERE id = "JEFFREY D." AS jeffrey'),
    Form("FIND nodes with id=2018 AS year", 'FIND nodes WHERE id = "2018" AS year'),
    Form("FIND nodes with id=U.S. DEPARTMENT OF HEALTH AND HUMAN SERVICES AS hhs",
         'FIND nodes WHERE id = "U.S. DEPARTMENT OF HEALTH AND HUMAN SERVICES" AS hhs'),
    Form("FIND nodes with id=CENTER FOR SURVEILLANCE, EPIDEMIOLOGY, AND LABORATORY SERVICES AS center",
         'FIND nodes WHERE id = "CENTER FOR SURVEILLANCE, EPIDEMIOLOGY, AND LABORATORY SERVICES" AS center'),
    Form("FIND nodes with id=97% OF THE U.S. POPULATION LIMIT 1 AS share",
         'FIND nodes WHERE id = "97% OF THE U.S. POPULATION" LIMIT 1 AS share'),
    Form("FIND nodes with id=ICD-10-CM CODE AS PRIMARY DIAGNOSIS AS code",
         'FIND nodes WHERE id = "ICD-10-CM CODE AS PRIMARY DIAGNOSIS" AS code'),
    Form("FIND nodes with id=ICD-10-CM/ICD-10-PCS CODES: T40.0X1, T40.1X1, T40.2X1, T40.3X1, T40... AS codes",
         'FIND nodes WHERE id = "ICD-10-CM/ICD-10-PCS CODES: T40.0X1, T40.1X1, T40.2X1, T40.3X1, T40..." AS codes'),
    Form("FIND edges with source=DANIEL B. JERNIGAN AS from_daniel",
         'FIND edges WHERE source = "DANIEL B. JERNIGAN" AS from_daniel'),
    Form("FIND nodes with id: ADULTS AGED 65 YEARS and entity_type=PERSON",
         'FIND nodes WHERE id = "ADULTS AGED 65 YEARS" AND entity_type = "PERSON" AS found_nodes'),
]  # fmt: skip

# `field: n = v`, v a variable a command before made: that variable on every row.
ADD_FIELD_VARIABLES = [
    Form("SELECT orgs FIELDS id AS org_ids\nADD_FIELD people field: orgs = org_ids AS with_orgs",
         "SELECT orgs FIELDS id AS org_ids\nADD_FIELD people FIELD orgs = ${org_ids} AS with_orgs"),
    Form("COUNT orgs AS n_orgs\nADD_FIELD people field: total = n_orgs AS with_total",
         "COUNT orgs AS n_orgs\nADD_FIELD people FIELD total = ${n_orgs} AS with_total"),
    Form("COUNT strong AS n_strong; ADD_FIELD strong field: of = n_strong",
         "COUNT strong AS n_strong; ADD_FIELD strong FIELD of = ${n_strong} AS strong_with_of"),
    Form('FIND nodes WHERE id = "ROBIN LEE" AS lead\nADD_FIELD people field: lead = lead AS led',
         'FIND nodes WHERE id = "ROBIN LEE" AS lead\nADD_FIELD people FIELD lead = ${lead} AS led'),
    Form("DECLARE seen AS LIST\nADD_FIELD orgs field: seen = seen AS marked",
         "DECLARE seen AS LIST\nADD_FIELD orgs FIELD seen = ${seen} AS marked"),
    Form("AGGREGATE sample BY entity_type WITH COUNT AS kinds\nADD_FIELD orgs field: kinds = kinds",
         "AGGREGATE sample BY entity_type WITH COUNT AS kinds\nADD_FIELD orgs FIELD kinds = ${kinds} AS orgs_with_kinds"),
]  # fmt: skip

# `COUNT x field f where C` counts the rows meeting C; with `group by f` (before or after the
# condition) it counts them per value of f.
COUNT_WHERE = [
    Form("COUNT people field entity_type where entity_type=PERSON AS n_persons",
         'COUNT people WHERE entity_type = "PERSON" AS n_persons'),
    Form("COUNT strong field weight where weight >= 9.5 AS heavy_n", "COUNT strong WHERE weight >= 9.5 AS heavy_n"),
    Form("COUNT sample field entity_type where entity_type=ORGANIZATION",
         'COUNT sample WHERE entity_type = "ORGANIZATION" AS sample_count'),
    Form("COUNT sample where entity_type != PERSON group by entity_type AS others",
         'SELECT sample WHERE entity_type != "PERSON" AS sample_where; AGGREGATE sample_where BY entity_type WITH COUNT AS others'),
    Form("COUNT strong group by source where weight >= 9.5 AS per_source",
         "SELECT strong WHERE weight >= 9.5 AS strong_where; AGGREGATE strong_where BY source WITH COUNT AS per_source"),
    Form('COUNT people where description contains "CDC" group by entity_type',
         'SELECT people WHERE description CONTAINS "CDC" AS people_where; AGGREGATE people_where BY entity_type WITH COUNT AS people_count'),
]  # fmt: skip

PATHS_WITHOUT_COLONS = [
    Form("FIND paths with source_filter id=ROBIN LEE target_filter entity_type=ORGANIZATION max_length 2 AS org_links",
         'FIND paths FROM (id = "ROBIN LEE") TO (entity_type = "ORGANIZATION") MAX_LENGTH 2 AS org_links'),
    Form("FIND paths with source_filter id=BRIANA MORELAND and target_filter id=ROBIN LEE AS pair",
         'FIND paths FROM (id = "BRIANA MORELAND") TO (id = "ROBIN LEE") AS pair'),
]  # fmt: skip

GUARDS_OF_THE_COMMAND_BEFORE = [
    Form('FIND nodes WHERE entity_type = "FUNDER" AS funders\nON EMPTY do: COUNT orgs AS n',
         'FIND nodes WHERE entity_type = "FUNDER" AS funders\nON EMPTY funders THEN COUNT orgs AS n'),
    Form("FIND nodes with entity_type=SPONSOR\non empty do FIND nodes with entity_type=ORGANIZATION LIMIT 3 AS found_nodes",
         'FIND nodes WHERE entity_type = "SPONSOR" AS found_nodes\nON EMPTY found_nodes THEN FIND nodes WHERE entity_type = "ORGANIZATION" LIMIT 3 AS found_nodes'),
]  # fmt: skip

ACCEPTED: list[Form] = [
    *_find_pairs(),
    *NAMES_UNQUOTED,
    *ADD_FIELD_VARIABLES,
    *COUNT_WHERE,
    *PATHS_WITHOUT_COLONS,
    *GUARDS_OF_THE_COMMAND_BEFORE,
    *FIND_WITHOUT_AS,
    *CANONICAL_LOWER_CASE,
    *INSTRUCTIONS,
    *INSTRUCTIONS_WITHOUT_AS,
    *COUNTS,
    *RANKS,
    *GUARDS,
    *UPDATES,
    *REQUIRES,
    *TRIES,
    *WALKS,
    *ADD_FIELDS,
    *CREATES,
    *AGGREGATES,
]

REFUSED: list[Refused] = [
    Refused("GRAPHPATTERN find (a)-[co_author]->(b) in people", "FIND paths FROM"),
    Refused("GRAPHPATTERN find person-organization in sample", "FIND paths FROM"),
    Refused("GENERATE summary from people", 'PROCESS <var> USING "<what to write>"'),
    Refused("GENERATE report from strong with format: bullets", 'PROCESS <var> USING "<what to write>"'),
    Refused("CLUSTER people by topic", "AGGREGATE <var> BY <field> WITH COLLECT OF id"),
    Refused("CLUSTER orgs with criteria: sector", "CLASSIFY <var> INTO"),
    Refused("SUBGRAPH around robin radius 1 include PERSON, ORGANIZATION", "SELECT near WHERE entity_type IN"),
    Refused("ADD_FIELD people field: ids = orgs AS y", "FIELD ids = ${orgs}"),
    Refused("CREATE_GROUPS from per_type with type: KIND_GROUP", "CREATE_GROUPS FROM <var> BY <field>"),
    Refused("ADD_FIELD people field: total = n_total AS with_total", "FIELD total = ${n_total}"),
    Refused("SET name = value", "SET adapter.caps.<key>=<integer>"),
    Refused("SET robin_id = ROBIN LEE", "a variable is what a command makes with AS <name>"),
    Refused("AGGREGATE strong by source with avg AS mean_weight",
            "AGGREGATE strong BY source WITH AVG OF <field> AS mean_weight"),
    Refused("AGGREGATE strong with sum", "AGGREGATE strong WITH SUM OF <field> AS strong_aggregate"),
    Refused("SUBGRAPH FROM robin DEPTH 1 include PERSON,ORGANIZATION AS near",
            'NEIGHBORS robin DEPTH 1 AS near, then SELECT near WHERE entity_type IN ["PERSON", "ORGANIZATION"]'),
    Refused("ON EMPTY do COUNT people AS n", "write ON EMPTY <var> THEN <command>"),
]  # fmt: skip
