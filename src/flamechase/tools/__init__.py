"""Runtime programs: what the runtime runs as `Run` commands of a flow, in their own processes,
and the machine-work helpers agents call from inside their jails (`flamechase job`, `lock`).

Each module is a small program (`python -I -m flamechase.tools.<name> ...`: always started
isolated, `interpreter.runtime_module`, since it runs in places agents' files reach) or the
library behind one: it does one job on files and git repositories and prints one JSON line as
its last line of stdout: the result (exit 0), or `{"error": "..."}` (exit 1). They never read
or write run state: the engine keeps their receipts, and the flow that asked for them reads
the JSON back.

    git_pr/   parallel_flame_chase:git_pr's programs (gitpr: the central repository, clones,
              forwarding lane pushes through its pre-receive `hook`, clean checkouts, merges;
              publish: a merge's changed paths copied into the source tree, each checked
              first; git: git as the runtime runs it). A group of the flow's own here rather
              than under flows/git_pr/: a program imports its package's parents, and
              `flamechase.flows` loads the flows (`python -I -m flamechase.tools.git_pr.gitpr`
              starts in about 0.1 s, through flows/ it would take 0.5 s).
    treesync  mirror, diff, apply and hash trees between places (any flow; parrallello uses it)
    gitpoint  checkpoint tags and integration into the source (any flow; parrallello uses it)
    blobcheck  re-hash frozen artifact blobs before a flow hands them on (the mission flow)
    jobs, locks  background jobs and the measurement lock, for agents inside a turn

Every git command runs with its own configuration (`git_pr/git.py`): the user's global and
system config, hooks and identity never apply to the runtime's repositories. Imports `fsutil`,
`errors`, `globs` and `interpreter` at most (leaves): a program must start fast and depend on
little.
"""
