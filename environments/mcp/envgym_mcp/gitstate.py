"""A git repository as an MCP server's state: created from a task, read back as tables (runs in the sandbox).

Standard library and the ``git`` binary only: :class:`envgym_mcp.spec.GitState` runs it inside the sandbox
as ``python3 -c <this source> seed DIR INIT.json`` before the server starts, and ``... dump DIR`` to read the
state, which it prints as JSON tables:

- ``commits``: every commit on every branch's first-parent line: ``branch``, ``depth`` (0 is the tip),
  ``message`` (stripped), ``tree`` (the tree's hash: the same files give the same hash on every run, where
  commit hashes differ by their dates);
- ``head``: one row, the checked-out ``branch`` (``""`` when detached) and its commit's ``tree``;
- ``files``: the files at HEAD (``path``, ``blob`` hash);
- ``index``: staged changes against HEAD (``path``, ``status`` letter);
- ``worktree``: the work tree's changes against the index and untracked files (``path``, ``status``).

``seed`` makes ``DIR`` a repository on ``main`` with the commits of INIT's ``commits`` (each
``{"message": ..., "files": {path: text}}``; a text of ``null`` deletes the file), optional ``branches``
(``{name: depth}``: a branch at the tip's ``depth``-th first parent), and INIT's ``files`` written (not
staged) on top. Author, committer and dates are fixed, so a seeded repository is the same on every run.
"""

import json
import os
import subprocess
import sys

FIXED = {"GIT_AUTHOR_NAME": "envgym", "GIT_AUTHOR_EMAIL": "envgym@localhost", "GIT_COMMITTER_NAME": "envgym",
         "GIT_COMMITTER_EMAIL": "envgym@localhost", "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
         "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z"}


def git(repo, *args, check=True):
    argv = ["git", "-C", repo, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
            "-c", "safe.directory=*", *args]
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **FIXED})
    if check and done.returncode != 0:
        sys.exit(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def write_files(repo, files):
    for path, text in files.items():
        target = os.path.join(repo, path)
        if text is None:
            if os.path.exists(target):
                os.remove(target)
            continue
        os.makedirs(os.path.dirname(target) or repo, exist_ok=True)
        with open(target, "w", encoding="utf-8") as out:
            out.write(text)


def seed(repo, init_path):
    with open(init_path, encoding="utf-8") as f:
        init = json.load(f)
    os.makedirs(repo, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    for commit in init.get("commits", []):
        write_files(repo, commit.get("files", {}))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", commit["message"])
    for name, depth in (init.get("branches") or {}).items():
        git(repo, "branch", name, f"main~{int(depth)}")
    write_files(repo, init.get("files", {}))


def dump(repo):
    branches = git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads").split()
    commits = []
    for branch in branches:
        log = git(repo, "log", "--first-parent", "-z", "--format=%T%x01%B", branch)
        for depth, entry in enumerate(e for e in log.split("\x00") if e.strip()):
            tree, _, message = entry.strip("\n").partition("\x01")
            commits.append({"branch": branch, "depth": depth, "message": message.strip(), "tree": tree})
    current = git(repo, "symbolic-ref", "-q", "--short", "HEAD", check=False).strip()
    has_head = bool(git(repo, "rev-parse", "-q", "--verify", "HEAD", check=False).strip())
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip() if has_head else ""
    files = []
    if has_head:
        for line in git(repo, "ls-tree", "-r", "-z", "HEAD").split("\x00"):
            if line:
                meta, path = line.split("\t", 1)
                files.append({"path": path, "blob": meta.split()[2]})
    index = _pairs(git(repo, "diff", "--cached", "--name-status", "-z", "--no-renames")) if has_head else \
        [{"path": p, "status": "A"} for p in git(repo, "ls-files", "-z").split("\x00") if p]
    worktree = []
    for entry in git(repo, "status", "--porcelain=v1", "-z", "-uall", "--no-renames").split("\x00"):
        if entry and entry[1] != " ":
            worktree.append({"path": entry[3:], "status": entry[1]})
    print(json.dumps({"commits": commits, "head": [{"branch": current, "tree": tree}], "files": files,
                      "index": index, "worktree": worktree}))


def _pairs(text):
    parts = [p for p in text.split("\x00") if p]
    return [{"path": parts[i + 1], "status": parts[i]} for i in range(0, len(parts) - 1, 2)]


def main():
    command, repo = sys.argv[1], sys.argv[2]
    if command == "seed":
        seed(repo, sys.argv[3])
    elif command == "dump":
        dump(repo)
    else:
        sys.exit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
