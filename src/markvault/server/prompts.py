"""The server's prompts: workflows a person picks from the client's menu.

An argument named ``note``, ``topic``, ``project`` or ``session`` names that in the
vault, and the client completes it as it is typed (``completion``).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

PROMPTS = frozenset({"recall", "save_summary", "summarize_session", "review_topic"})

# The closing line of the prompts that write. (Not named after what it forbids: the
# credential gate would read `<secret word> = "<sentence>"` as a passphrase.)
PRIVACY_RULE = "Never store secrets, tokens or passwords."


def register_prompts(server: MCPServer) -> None:
    @server.prompt()
    def recall(task: str, project: str | None = None) -> str:
        """Recall what the vault knows before starting a task (in a project, if given)."""
        scope = f', project=["{project}"]' if project else ""
        return (
            f"Before working on this task, recall what my vault knows about it.\n\n"
            f"Task: {task}\n" + (f"Project: {project}\n" if project else "") + "\n"
            f"1. Call `search` with the task's key words (format index{scope}), then again "
            "in `deep` mode with 3-5 variants of your own (lex: keyword rewrites, vec: "
            "paraphrases, hyde: a short hypothetical answer).\n"
            f"2. Call `recent` for the last few days of this project{scope}.\n"
            "3. `get` the 3-5 most relevant notes; follow `related` links if they matter.\n"
            "4. Summarise what is known, decided and still open, citing vault:// URIs. "
            "Say plainly when the vault has nothing on it."
        )

    @server.prompt()
    def save_summary(work: str = "this session", project: str | None = None) -> str:
        """Save a summary of the work just done into the vault."""
        where = f'the project "{project}"' if project else "the project"
        return (
            f"Save a summary of {work} into my vault.\n\n"
            "0. If the work is an imported Claude Code session (`list_sessions`), read it "
            "with `read_session` and save with `save_session_summary` instead; stop there.\n"
            "1. `search` for an existing note on the same work (sessions, notes); if one "
            "fits, `get` it and extend it with `edit_note` (pass its hash).\n"
            f'2. Otherwise `create_note` with kind "session" (or "note"), a specific '
            f"title, {where}, and tags. Content: an overview of 2-3 sentences, then "
            "sections ## Decisions, ## Outcomes and ## Open items as bullet lists, with "
            "[[wikilinks]] to the notes involved.\n"
            "3. For each lasting fact or lesson, `learn_knowledge` under a fitting topic.\n"
            + PRIVACY_RULE
        )

    @server.prompt()
    def summarize_session(session: str) -> str:
        """Summarise an imported coding session into its note (decisions, outcomes, open
        items), so that it can be searched by them."""
        return (
            f"Summarise the coding session {session} into my vault.\n\n"
            f'1. `read_session` with ref="{session}": its metadata, any summary it has, '
            "and the transcript in pages. For a long session, pass a `query` to find the "
            "turns that matter and read those.\n"
            "2. Write an overview of 2-3 sentences (what it set out to do, what happened); "
            "the decisions, each with its reason; the outcomes (files, behaviour changed); "
            "what is left open. One line per item.\n"
            "3. `save_session_summary` with the hash `read_session` returned; if the note "
            "changed meanwhile, read it again and redo the change.\n" + PRIVACY_RULE
        )

    @server.prompt()
    def review_topic(topic: str) -> str:
        """Review a topic's knowledge points: duplicates, contradictions, what is out of
        date; propose fixes."""
        return (
            f'Review what my vault knows about the topic "{topic}".\n\n'
            f"1. Read the resource knowledge://{topic} (or `search` with "
            f'topic=["{topic}"]) for its knowledge points.\n'
            "2. Find points that repeat each other, contradict each other, or look out of "
            "date (check `recent` notes and sessions for newer decisions).\n"
            "3. Propose changes, citing vault:// URIs: merge duplicates, mark outdated "
            "points (`edit_note` set_key valid_until or superseded_by), correct wrong "
            "ones. Make them only after I agree."
        )
