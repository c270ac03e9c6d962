"""Views of a run: the live terminal view, the HTML replay, `serve`, and trace export.

Everything here reads snapshots and the store; it never writes run state. A view is a fold
over the run's append-only `events` table (`state.RunFold`), so a finished run, a live run
and a run being replayed all go through the same code, and what a view shows can always be
checked against the events it was built from.

    state.py        the fold: events -> frozen `RunSnapshot`s; each event shows itself
                    against it (events/present.py)
    rows.py         what the fold keeps and hands out (lane rows, snapshots, changes)
    inbox.py        reports and inboxes: published, delivered, acknowledged, pending
    turns.py        a turn's events: its lane's row, its inbox, what it spent
    board.py        the leaderboard and the flows' panels, from what events show
    replay.py       the replay document (points with deltas) and the self-contained HTML page
    assets.py       the page's hand-written CSS and JS
    trace.py        Chrome trace-event JSON (Perfetto)
    renderables.py  rich renderables over a snapshot (pure)
    live.py         the `exec` TTY observer (rich Live)
    summary.py      what a run amounted to, in a few lines (`demo`, `simulate`, `show`)
    simulate.py     `simulate` and `demo`: a flow run in-process with `sim` actors
    serve.py        `serve`: starlette app, token-guarded, live over server-sent events
"""
