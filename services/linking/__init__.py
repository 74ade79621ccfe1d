"""What a small model cannot recall about a graph, computed from the graph itself: its name
index (which node a question's words name; `names`) and its schema card (which entity types
and relations it holds, and which of them a question is about; `card`). Both are built in one
pass over the graph's nodes and relations when it is added, stored with its version, and read
by the intent stage (linking) and the planner (prompts and the per-job grammar)."""
