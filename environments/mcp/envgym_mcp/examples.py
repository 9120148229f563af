"""The ``mcp-sqlite``, ``mcp-time`` and ``mcp-git`` suites: three MCP servers from PyPI as environments, by suite
file alone.

Every task is for the generic env ``mcp/server-v1`` and names its server in ``metadata.server`` (an
:class:`~envgym_mcp.spec.McpServerSpec` as JSON); no code of the servers' is in envgym, and none of their
packages in its venv: each runs in an image of its own built from its wheels (:mod:`envgym_mcp.images`).

- ``mcp-sqlite``: ``mcp-server-sqlite`` (it needs ``mcp<2``; envgym runs ``mcp>=2.3``). It annotates no tool,
  so ``read_tools`` names its reads. The state is its database file, created from the task's
  ``initial_state.sql``; graded on the final database against the reference's replay, and on the answer.
- ``mcp-time``: ``mcp-server-time``, stateless (``state: null``): answer-graded conversions between zones that
  keep no daylight saving time, so the answer does not depend on the day the task runs; no write allowed.
- ``mcp-git``: ``mcp-server-git`` against a repository the task ships (``initial_state``: commits and files,
  created in the sandbox), graded on the repository's final state (commits by message and tree, the files at
  HEAD, the index, the work tree) against the reference's replay.

``python -m envgym_mcp.examples`` writes the three suites (``tasks/mcp-*/tasks.jsonl``), byte for byte the same
on every run.
"""

from __future__ import annotations

from typing import Any

from envgym.plugin import (
    Action,
    AnswerSpec,
    Limits,
    TaskSpec,
    VerifierSpec,
    WriteActionSpec,
    answer_pattern,
    number_pattern,
    refuse_quote,
    write_suite,
)
from envgym_mcp.authoring import _Script  # a reference solution and the writes it expects

ENV_ID = "mcp/server-v1"
SQLITE: dict[str, Any] = {
    "name": "sqlite", "package": "mcp-server-sqlite==2025.4.25", "requirements": ["mcp==1.30.0"],
    "command": ["mcp-server-sqlite", "--db-path", "{state}"],
    "state": {"kind": "sqlite", "path": "shop.db", "seed": True},
    "read_tools": ["read_query", "list_tables", "describe_table"]}
TIME: dict[str, Any] = {
    "name": "time", "package": "mcp-server-time==2026.10.19", "command": ["mcp-server-time", "--local-timezone", "UTC"],
    "state": None}
GIT: dict[str, Any] = {
    "name": "git", "package": "mcp-server-git==2026.10.19", "command": ["mcp-server-git", "--repository", "{state}"],
    "state": {"kind": "git", "path": "repo"}}
REPO = "/work/repo"

SHOP_SQL = """\
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL NOT NULL, stock INTEGER NOT NULL);
INSERT INTO products VALUES (1, 'Notebook', 3.5, 120), (2, 'Pen', 1.2, 300), (3, 'Desk lamp', 22.0, 15),
  (4, 'Backpack', 39.9, 8), (5, 'Stapler', 7.25, 0);
CREATE TABLE orders (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL REFERENCES products(id),
  qty INTEGER NOT NULL, status TEXT NOT NULL);
INSERT INTO orders VALUES (1001, 1, 10, 'shipped'), (1002, 4, 1, 'pending'), (1003, 3, 2, 'pending'),
  (1004, 2, 50, 'cancelled');
"""
HISTORY = [{"message": "Initial commit", "files": {"README.md": "# Greeter\n", "src/app.py": "print('hello')\n"}},
           {"message": "Add notes", "files": {"notes.txt": "- write docs\n"}}]


def _task(suite: str, index: int, slug: str, server: dict[str, Any], instruction: str, script: _Script, *,
          final: str = "Done.", answer: str | None = None, initial: dict[str, Any] | None = None,
          compare_state: bool = True) -> TaskSpec:
    verifiers: list[VerifierSpec] = [WriteActionSpec(expected=tuple(script.writes), compare_final_state=compare_state)]
    if answer is not None:
        verifiers.append(AnswerSpec(kind="regex", expected=refuse_quote(answer, instruction)))
    kind = "question" if answer is not None else "write"
    return TaskSpec(id=f"{suite}-{index:03d}-{slug}", env_id=ENV_ID, split="test" if index % 2 else "train",
                    instruction=instruction, initial_state=initial or {}, limits=Limits(max_steps=20),
                    verifiers=tuple(verifiers), solution=(*script.actions, Action.say(final)), tags=(kind, "mcp"),
                    metadata={"kind": kind, "server": server})


def sqlite_tasks() -> list[TaskSpec]:
    initial = {"sql": SHOP_SQL}
    any_write: dict[str, Any] = {}  # the SQL text is free: the final database decides

    def task(index: int, slug: str, instruction: str, script: _Script, **kw: Any) -> TaskSpec:
        return _task("sqlite", index, slug, SQLITE, instruction, script, initial=initial, **kw)

    return [
        task(0, "lamp-price", "Raise the price of the Desk lamp to 24.50 in the shop database.",
             _Script().call("read_query", query="SELECT id, name, price FROM products WHERE name = 'Desk lamp'")
             .call("write_query", any_write, query="UPDATE products SET price = 24.5 WHERE id = 3")),
        task(1, "ship-order", "Order 1002 has been sent: set its status to 'shipped'.",
             _Script().call("describe_table", table_name="orders")
             .call("write_query", any_write, query="UPDATE orders SET status = 'shipped' WHERE id = 1002")),
        task(2, "add-cable", "Add a product 'USB cable' priced 5.99 with 40 units in stock.",
             _Script().call("list_tables").call("describe_table", table_name="products")
             .call("write_query", any_write,
                   query="INSERT INTO products (name, price, stock) VALUES ('USB cable', 5.99, 40)")),
        task(3, "notebook-stock", "How many notebooks are in stock? Answer with the number.",
             _Script().call("read_query", query="SELECT stock FROM products WHERE name = 'Notebook'"),
             final="120", answer=answer_pattern(number_pattern(120), max_numbers=1)),
        task(4, "pending-value", "What is the total value (price times quantity) of the pending orders? Answer with "
             "the amount.",
             _Script().call("read_query", query="SELECT SUM(p.price * o.qty) AS total FROM orders o JOIN products p "
                                                "ON p.id = o.product_id WHERE o.status = 'pending'"),
             final="83.90", answer=answer_pattern(number_pattern(83.9), max_numbers=1)),
    ]


def time_tasks() -> list[TaskSpec]:
    def task(index: int, slug: str, source: str, at: str, target: str, answer: str, question: str) -> TaskSpec:
        script = _Script().call("convert_time", source_timezone=source, time=at, target_timezone=target)
        hhmm = rf"(?<![\d:]){answer}(?![\d:])"
        return _task("time", index, slug, TIME, question, script, final=answer,
                     answer=answer_pattern(hhmm, max_numbers=1), compare_state=False)

    return [
        task(0, "tokyo-kolkata", "Asia/Tokyo", "09:30", "Asia/Kolkata", "06:00",
             "It is 09:30 in Tokyo (Asia/Tokyo). What time is it in Kolkata (Asia/Kolkata)? Answer as HH:MM."),
        task(1, "utc-kathmandu", "UTC", "14:15", "Asia/Kathmandu", "20:00",
             "A call is at 14:15 UTC. What time is that in Kathmandu (Asia/Kathmandu)? Answer as HH:MM."),
        task(2, "dubai-brisbane", "Asia/Dubai", "23:00", "Australia/Brisbane", "05:00",
             "A flight leaves Dubai (Asia/Dubai) at 23:00. What time is it then in Brisbane (Australia/Brisbane)? "
             "Answer as HH:MM."),
        task(3, "phoenix-shanghai", "America/Phoenix", "08:00", "Asia/Shanghai", "23:00",
             "At 08:00 in Phoenix (America/Phoenix), what time is it in Shanghai (Asia/Shanghai)? Answer as HH:MM."),
    ]


def git_tasks() -> list[TaskSpec]:
    def task(index: int, slug: str, instruction: str, script: _Script, files: dict[str, str] | None = None,
             **kw: Any) -> TaskSpec:
        initial = {"commits": HISTORY, "files": files or {}}
        return _task("git", index, slug, GIT, f"The repository is at {REPO}. {instruction}", script,
                     initial=initial, **kw)

    readme = {"README.md": "# Greeter\n\nRun `python src/app.py`.\n"}
    both = {"src/app.py": "print('hello, world')\n", "notes.txt": "- write docs\n- add tests\n"}
    return [
        task(0, "commit-readme", "Stage README.md and commit it with the message 'Document usage'.",
             _Script().call("git_status", repo_path=REPO)
             .call("git_add", {"files": ["README.md"]}, repo_path=REPO, files=["README.md"])
             .call("git_commit", {"message": {"$regex": r"^\s*Document usage\s*$"}}, repo_path=REPO,
                   message="Document usage"), files=readme),
        task(1, "commit-app-only", "Commit only the change to src/app.py, with the message 'Greet the world'; leave "
             "notes.txt uncommitted.",
             _Script().call("git_diff_unstaged", repo_path=REPO)
             .call("git_add", {"files": ["src/app.py"]}, repo_path=REPO, files=["src/app.py"])
             .call("git_commit", {"message": {"$regex": r"^\s*Greet the world\s*$"}}, repo_path=REPO,
                   message="Greet the world"), files=both),
        task(2, "feature-branch", "Create a branch named feature/login from main and check it out.",
             _Script().call("git_branch", repo_path=REPO, branch_type="local")
             .call("git_create_branch", {"branch_name": "feature/login"}, repo_path=REPO,
                   branch_name="feature/login", base_branch="main")
             .call("git_checkout", {"branch_name": "feature/login"}, repo_path=REPO, branch_name="feature/login")),
        task(3, "first-commit", "What is the message of the first commit in the repository's history? Answer with "
             "the message.",
             _Script().call("git_log", repo_path=REPO), final="Initial commit",
             answer=answer_pattern(r"\binitial commit\b", reject=(r"\badd notes\b",))),
    ]


def build() -> dict[str, list[TaskSpec]]:
    return {"mcp-sqlite": sqlite_tasks(), "mcp-time": time_tasks(), "mcp-git": git_tasks()}


READMES = {
    "mcp-sqlite": "mcp-server-sqlite (PyPI) as an environment, by suite file alone: a shop database",
    "mcp-time": "mcp-server-time (PyPI) as an environment, by suite file alone: stateless, answer-graded",
    "mcp-git": "mcp-server-git (PyPI) as an environment, by suite file alone: a repository the task ships",
}


if __name__ == "__main__":
    for name, tasks in build().items():
        write_suite(name, tasks)
