"""Runtime programs: what the runtime runs as `Run` commands of a flow, in their own processes.

Each module is a small program (`python -m flamechase.tools.<name> ...`) that does one job on
files and git repositories and prints one JSON line as its last line of stdout: the result
(exit 0), or `{"error": "..."}` (exit 1). They never read or write run state: the engine keeps
their receipts, and the flow that asked for them reads the JSON back from the receipt.

    gitpr    the git work of parallel_flame_chase:git_pr's runtime (central repository, clones,
             forwarding lane pushes through the hook, clean checkouts, merges)
    hook     the central repository's pre-receive hook
    publish  copy the changed paths of a merge into the source tree, each checked first

Every git command runs with its own configuration (`git.py`): the user's global and system
config, hooks and identity never apply to the runtime's repositories.

Imports nothing else of flamechase: a program must start fast and depend on nothing else.
"""
